extends "res://tests/test_base.gd"
## Headless tests of [PipeWaterWorld], water for a world in pages on the wgpu device: a world
## past the largest PipeWater grid holds a lake where it was poured, answers queries anywhere,
## keeps its ledger exact, shows the water around its focus node in its textures and the far water
## beyond them in coarse ones, steps far water at the focus policy's pace (paused water keeps every
## bit), floats a PipeWaterBody crate at its draft across a page corner, rings detail waves
## over its window across page borders, takes its ground from a Terrain3D, an HTerrain or a
## HeightMapShape3D read in slices over frames and followed through their edits
## (res://tests/world_terrain_sources.gd), and refuses bad input with a message and no effect.
## That the world steps as the dense grid does, bit for bit, is tested in Rust (tests/gpu_world.rs,
## tests/gpu_world_water.rs); that the far water's texels are the CPU's aggregation of the full
## read, in tests/gpu_world_coarse.rs; that its detail waves are a dense grid's, in
## tests/gpu_world_detail.rs.

const SIDE: int = 20000


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	print("PipeWater world tests, Godot %s" % Engine.get_version_info().string)
	await _test_a_lake_in_a_world_past_the_dense_limit()
	await _test_ground_from_a_coarse_image_and_a_sea_at_an_edge()
	await _test_saves_load_back_and_bad_bytes_are_refused()
	await _test_bad_input_is_refused_with_no_effect()
	await _test_a_games_undo_through_a_change_record()
	await _test_far_water_sits_out_frames_and_flows_when_a_focus_comes()
	await _test_far_water_is_drawn_beyond_the_window()
	await _test_a_second_far_level_draws_water_beyond_the_first()
	await _test_a_crate_floats_on_a_world_at_its_draft()
	await _test_detail_waves_cross_page_borders_on_a_world()
	await _test_the_world_demo_runs_and_its_dam_breaks()
	await preload("res://tests/world_terrain_sources.gd").new(self).run()
	_finish()


## Global position of the centre of cell (x, y) of a world of SIDE² 1 m cells at the origin.
func _cell_position(x: int, y: int) -> Vector3:
	return Vector3(x + 0.5 - SIDE / 2.0, 0.0, y + 0.5 - SIDE / 2.0)


func _make_world() -> PipeWaterWorld:
	var world := PipeWaterWorld.new()
	world.world_size = Vector2i(SIDE, SIDE)
	world.cell_size = 1.0
	world.ground_height = 10.0
	world.running = false
	root.add_child(world)
	await process_frame
	return world


func _test_a_lake_in_a_world_past_the_dense_limit() -> void:
	print("-- a %d² world (PipeWater's grid stops at 16384²): a lake in a basin near a corner" % SIDE)
	var world: PipeWaterWorld = await _make_world()
	_check(world.is_ready(), "the world exists: %s" % world.get_last_error())
	if not world.is_ready():
		world.free()
		return
	# A basin 6 m deep: cells 105..134 on a side at 4 m, walls at 10 m.
	var heights := PackedFloat32Array()
	for i in 40 * 40:
		var inside: bool = i % 40 >= 5 and i % 40 < 35 and i / 40 >= 5 and i / 40 < 35
		heights.append(4.0 if inside else 10.0)
	world.set_terrain_region(Rect2i(Vector2i(100, 100), Vector2i(40, 40)), heights)
	var centre: Vector3 = _cell_position(120, 120) - Vector3(0.5, 0.0, 0.5)
	var placed: float = world.add_water(centre, 900.0, 14.0)
	_near(placed, 900.0, 0.001, "add_water places 900 m³")
	var focus := Node3D.new()
	root.add_child(focus)
	focus.global_position = centre
	world.focus_node = world.get_path_to(focus)
	world.window_cells = 64
	for i in 1200:
		world.step(1.0 / 30.0)
	var surface: float = world.get_height(centre)
	var depth: float = world.get_depth(centre)
	print("   after 40 s: surface %.4f m, depth %.4f m at the basin's centre" % [surface, depth])
	_near(surface, 5.0, 0.05, "900 m³ over the 30 × 30 m floor stands at 5 m")
	_near(depth, 1.0, 0.05, "the lake is 1 m deep")
	_near(world.get_height(Vector3.ZERO), 10.0, 1.0e-6,
			"the dry centre of the world answers with its ground")
	_check(world.get_height(Vector3(SIDE, 0.0, 0.0)) == -INF, "off the world get_height is -INF")
	var ledger: Dictionary = world.get_water_ledger()
	print("   ledger: %s" % ledger)
	_check(ledger.get("exact", false), "the ledger is exact")
	_near(ledger.get("held", 0.0), 900.0, 0.001, "the world holds the 900 m³ poured")
	world.refresh_window()
	var report: Dictionary = world.get_world_report()
	print("   report: %s" % report)
	_check(report.get("device_bytes", 1 << 40) < 200 * 1024 * 1024,
			"the device holds %.1f MiB, not the world's %d MiB of dense fields" % [
				report.get("device_bytes", 0) / 1048576.0, SIDE * SIDE * 44 / 1048576])
	var origin: Vector2i = report.get("window_origin", Vector2i(-1, -1))
	_check(origin.x <= 105 and origin.x + 64 >= 135 and origin.y <= 105 and origin.y + 64 >= 135,
			"the 64-cell window around the focus covers the basin (origin %s)" % origin)
	var texture: ImageTexture = world.height_texture
	_check(texture != null and texture.get_size() == Vector2(64, 64),
			"height_texture is the 64² window")
	# The image the texture was given (a headless renderer keeps a texture's first image).
	var image: Image = world.get_height_image()
	_check(image != null and image.get_size() == Vector2i(64, 64),
			"get_height_image() is the 64² window")
	if image != null:
		var texel: Color = image.get_pixel(120 - origin.x, 120 - origin.y)
		print("   height texel at the basin's centre: %s" % texel)
		_near(texel.g, depth, 0.02, "the texel's depth is the query's")
		_check(texel.a == 1.0 and absf(texel.b - 4.0) < 1.0e-6, "the texel is wet over the 4 m floor")
	var rect: Rect2 = world.get_window_rect()
	_check(rect.has_point(Vector2(centre.x, centre.z)), "get_window_rect() holds the focus: %s" % rect)
	var source: int = world.add_source(_cell_position(SIDE - 60, SIDE - 60), 3.0, 2.0)
	_check(source >= 0, "a source at the far corner")
	world.step(1.0)
	var far_depth: float = world.get_depth(_cell_position(SIDE - 60, SIDE - 60))
	_check(far_depth > 0.0, "its water is at the far corner: %.4f m deep" % far_depth)
	_check(world.remove_source(source) and not world.remove_source(source), "remove_source once")
	_check(world.get_water_ledger().get("exact", false), "the ledger is exact with the source")
	focus.free()
	world.free()


func _test_ground_from_a_coarse_image_and_a_sea_at_an_edge() -> void:
	print("-- a 2 × 2 heightmap at 32 cells a pixel, and a sea held at the south edge")
	var world := PipeWaterWorld.new()
	world.world_size = Vector2i(64, 64)
	world.running = false
	root.add_child(world)
	await process_frame
	var image := Image.create(2, 2, false, Image.FORMAT_RF)
	image.set_pixel(0, 0, Color(0.0, 0, 0))
	image.set_pixel(1, 0, Color(1.0, 0, 0))
	image.set_pixel(0, 1, Color(2.0, 0, 0))
	image.set_pixel(1, 1, Color(3.0, 0, 0))
	world.set_terrain_from_image(image, 2.0, -1.0, Vector2i.ZERO, 32)
	_check(world.get_last_error().is_empty(), "the image is taken: %s" % world.get_last_error())
	# Pixel centres at cells 16 and 48: half-way between them, the four pixels' mean.
	_near(world.get_height(Vector3(0.0, 0.0, 0.0)), 2.0, 1.0e-5,
			"the ground between the pixel centres is bilinear: (0 + 1 + 2 + 3)/4 × 2 − 1")
	# Cell (16, 16) lies 1/64 pixel past the first pixel's centre along x and z: 0 + 1/64 × 1
	# + 1/64 × 2 in pixel values.
	_near(world.get_height(Vector3(-15.5, 0.0, -15.5)), 3.0 / 64.0 * 2.0 - 1.0, 1.0e-5,
			"next to the first pixel's centre the ground is bilinear in the pixels")
	world.boundary_south = PipeWater.BOUNDARY_LEVEL
	world.boundary_level_south = 6.0
	for i in 120:
		world.step(1.0 / 30.0)
	var ledger: Dictionary = world.get_water_ledger()
	print("   after 4 s: %s" % ledger)
	_check(ledger.get("boundary_in", 0.0) > 100.0, "the sea flows in over the low south edge")
	_check(ledger.get("exact", false), "the ledger is exact with the sea")
	_check(world.get_depth(Vector3(0.0, 0.0, 31.0)) > 0.5, "the south of the world is under the sea")
	world.free()


func _test_saves_load_back_and_bad_bytes_are_refused() -> void:
	print("-- save_state, save_state_async and load_state of a %d² world" % SIDE)
	var world: PipeWaterWorld = await _make_world()
	if not world.is_ready():
		_check(false, "the world exists: %s" % world.get_last_error())
		world.free()
		return
	var spot: Vector3 = _cell_position(300, 7000)
	world.add_water(spot, 500.0, 20.0)
	for i in 60:
		world.step(1.0 / 30.0)
	var depth: float = world.get_depth(spot)
	var bytes: PackedByteArray = world.save_state()
	print("   %d bytes saved; depth at the spot %.4f m" % [bytes.size(), depth])
	_check(bytes.size() > 0 and bytes.size() < 1 << 20, "the save holds the wet pages only")
	world.remove_water(spot, 400.0, 30.0)
	world.step(0.0)
	_check(world.get_depth(spot) < depth, "water taken out after the save")
	_check(world.load_state(bytes), "load_state takes the save: %s" % world.get_last_error())
	_near(world.get_depth(spot), depth, 1.0e-6, "the water is back as saved")
	_check(world.get_water_ledger().get("exact", false), "the ledger is exact after the load")
	_check(not world.load_state(bytes.slice(0, bytes.size() / 2)), "half a save is refused")
	print("   %s" % world.get_last_error())
	_near(world.get_depth(spot), depth, 1.0e-6, "and the world is kept")
	_check(world.save_state_async(), "save_state_async begins")
	_check(not world.save_state_async() and world.get_last_error().contains("already"),
			"a second save while one is on its way is refused")
	var async_bytes: PackedByteArray = await world.state_saved
	# Resumed inside the node's emission: let it return before freeing the node.
	await process_frame
	print("   the asynchronous save: %d bytes" % async_bytes.size())
	_check(not world.is_saving_state(), "no save on its way")
	world.add_water(spot, 100.0, 20.0)
	_check(world.load_state(async_bytes), "the asynchronous save loads")
	_near(world.get_depth(spot), depth, 1.0e-6, "with the water of when it began")
	world.add_water(spot, 100.0, 20.0)
	_check(world.load_state_async(async_bytes), "load_state_async begins")
	_check(not world.load_state_async(async_bytes) and world.get_last_error().contains("already"),
			"a second load while one is on its way is refused")
	var loaded: int = await world.state_loaded
	await process_frame
	_check(loaded == OK and not world.is_loading_state(), "state_loaded says OK: %d" % loaded)
	_near(world.get_depth(spot), depth, 1.0e-6, "the asynchronous load brings the saved water")
	_check(world.get_water_ledger().get("exact", false), "the ledger is exact after it")
	_check(world.load_state_async(bytes.slice(0, bytes.size() / 2)), "half a save begins loading")
	var refused: int = await world.state_loaded
	await process_frame
	_check(refused == ERR_INVALID_DATA, "and is refused (%d): %s" % [refused,
			world.get_last_error()])
	_near(world.get_depth(spot), depth, 1.0e-6, "with the world kept")
	world.free()


func _test_bad_input_is_refused_with_no_effect() -> void:
	print("-- bad input")
	var world: PipeWaterWorld = await _make_world()
	if not world.is_ready():
		_check(false, "the world exists: %s" % world.get_last_error())
		world.free()
		return
	var nan := Vector3(NAN, 0.0, 0.0)
	var nan_placed: float = world.add_water(nan, 1.0, 1.0)
	_check(nan_placed == 0.0 and world.get_last_error().contains("global_position"),
			"add_water at NaN is refused: %s" % world.get_last_error())
	var placed: float = world.add_water(Vector3.ZERO, 1.0e6, 0.1)
	_check(placed == 0.0 and world.get_last_error().contains("volume"),
			"a volume too deep for a cell is refused: %s" % world.get_last_error())
	var past: bool = world.set_terrain_region(Rect2i(Vector2i(SIDE - 2, 0), Vector2i(4, 1)),
			PackedFloat32Array([1, 2, 3, 4]))
	_check(not past and world.get_last_error().contains("set_terrain_region: region"),
			"a terrain region past the world is refused: %s" % world.get_last_error())
	var nan_height: bool = world.set_terrain_region(Rect2i(Vector2i(0, 0), Vector2i(2, 1)),
			PackedFloat32Array([1, NAN]))
	_check(not nan_height and world.get_last_error().contains("heights"),
			"a NaN height is refused: %s" % world.get_last_error())
	var missed: Variant = world.intersect_ray(Vector3(0, 50, 0), Vector3.ZERO)
	_check(missed == null and world.get_last_error().contains("non-zero direction"),
			"a ray with no direction is refused: %s" % world.get_last_error())
	missed = world.intersect_ray(Vector3(NAN, 50, 0), Vector3.DOWN)
	_check(missed == null and world.get_last_error().contains("finite"),
			"a ray from NaN is refused: %s" % world.get_last_error())
	var negative: bool = world.set_water_region(Rect2i(0, 0, 2, 1), PackedInt32Array([5, -5]))
	_check(not negative and world.get_last_error().contains("-5"),
			"a negative depth is refused: %s" % world.get_last_error())
	var empty_region: PackedInt32Array = world.get_water_region(Rect2i(3, 3, -2, 4))
	_check(empty_region.is_empty() and world.get_last_error().contains("get_water_region: region"),
			"a region of negative size is refused: %s" % world.get_last_error())
	_check(world.finish_change_record().is_empty(),
			"finishing a change record that was never begun gives nothing")
	world.step(-1.0)
	_check(world.get_last_error().contains("delta"), "a negative step is refused")
	world.set_terrain_from_image(null, 1.0, 0.0, Vector2i.ZERO, 1)
	_check(world.get_last_error().contains("null"), "a null image is refused")
	var small := Image.create(4, 4, false, Image.FORMAT_RF)
	world.set_terrain_from_image(small, 1.0, 0.0, Vector2i.ZERO, 0)
	_check(world.get_last_error().contains("cells_per_pixel"), "0 cells a pixel is refused")
	world.set_terrain_from_image(small, 1.0, 0.0, Vector2i(SIDE - 8, 0), 4)
	_check(world.get_last_error().contains("past the"),
			"an image past the world is refused: %s" % world.get_last_error())
	var ledger: Dictionary = world.get_water_ledger()
	_check(ledger.get("held", -1.0) == 0.0 and ledger.get("added", -1.0) == 0.0,
			"nothing was added: %s" % ledger)
	world.world_size = Vector2i(0, 5)
	world.step(0.1)
	_check(not world.is_ready() and world.get_last_error().contains("world_size"),
			"world_size 0 × 5 is refused: %s" % world.get_last_error())
	world.world_size = Vector2i(64, 64)
	world.step(0.1)
	_check(world.is_ready(), "a good size makes the world again")
	world.free()


## A game's own undo on a 20000² world (a player digs a trench by a lake and takes it back): the
## change record gives the dig's region before and after, exact; while it is open across frames
## the water waits and says so once; set_terrain_region and set_water_region with `before` put
## the ground and the water back to the bit; careless sizes are refused with their figures.
func _test_a_games_undo_through_a_change_record() -> void:
	print("-- a game's undo through a change record")
	var world: PipeWaterWorld = await _make_world()
	if not world.is_ready():
		_check(false, "the world exists: %s" % world.get_last_error())
		world.free()
		return
	world.running = true
	var lake := _cell_position(300, 300)
	world.add_water(lake, 2000.0, 12.0)
	for i in 5:
		await physics_frame
	var around := Rect2i(Vector2i(260, 260), Vector2i(120, 120))
	var water_then: PackedInt32Array = world.get_water_region(around)
	var ground_then: PackedFloat32Array = world.get_terrain_region(around)
	world.begin_change_record()
	world.modify_terrain(_cell_position(318, 300), -2.0, 4.0)
	world.paint_water(_cell_position(304, 300), -0.5, 3.0)
	world.clear_last_error()
	await physics_frame
	await physics_frame
	var held := world.get_water_region(around)
	var said := world.get_last_error()
	var changes: Dictionary = world.finish_change_record()
	var water: Dictionary = changes["water"]
	var terrain: Dictionary = changes["terrain"]
	print("   open over two frames: '%s'; the dig changed ground over %s, water over %s" % [said,
			terrain["region"], water["region"]])
	_check(said.contains("change record") and world.get_water_region(around) == held,
			"while the record is open the water waits, and says why")
	_check((terrain["region"] as Rect2i).has_area() and (water["region"] as Rect2i).has_area(),
			"the record holds the dig's ground and water")
	world.set_terrain_region(terrain["region"], terrain["before"])
	world.set_water_region(water["region"], water["before"])
	_check(world.get_terrain_region(around) == ground_then
			and world.get_water_region(around) == water_then,
			"writing `before` back gives the ground and the water to the bit")
	_check(world.get_water_ledger()["exact"], "the ledger stays exact through the undo")
	world.clear_last_error()
	var everything: PackedInt32Array = world.get_water_region(Rect2i(0, 0, SIDE, SIDE))
	_check(everything.is_empty() and world.get_last_error().contains("16777216"),
			"reading the whole world's depths at once is refused: %s" % world.get_last_error())
	world.paint_water(lake, 1.0, 5000.0)
	_check(world.get_last_error().contains("2000 cells"),
			"a brush of 5 km is refused: %s" % world.get_last_error())
	world.free()


func _test_far_water_sits_out_frames_and_flows_when_a_focus_comes() -> void:
	print("-- the focus policy: two pools on flat ground, one by the focus, one 400 m away")
	var world := PipeWaterWorld.new()
	world.world_size = Vector2i(512, 64)
	world.running = false
	root.add_child(world)
	await process_frame
	var near := Vector3(-200.0, 0.0, 0.5)
	var far := Vector3(200.0, 0.0, 0.5)
	var focus := Node3D.new()
	root.add_child(focus)
	focus.global_position = Vector3(-220.0, 0.0, 0.0)
	var focuses: Array[Node3D] = [focus]
	world.focus_nodes = focuses
	world.focus_radius = 100.0
	world.far_step_every = 0
	world.add_water(near, 100.0, 5.0)
	world.add_water(far, 100.0, 5.0)
	var near_before: float = world.get_depth(near)
	var far_before: float = world.get_depth(far)
	for i in 30:
		world.step(1.0 / 30.0)
	var near_after: float = world.get_depth(near)
	var far_after: float = world.get_depth(far)
	var report: Dictionary = world.get_world_report()
	print("   paused, 1 s: near pool %.4f -> %.4f m, far pool %.4f -> %.4f m; %d of %d pages held" % [
			near_before, near_after, far_before, far_after, report.get("held", -1),
			report.get("pages", -1)])
	_check(near_after < near_before - 0.1, "the pool by the focus spreads")
	_check(far_after == far_before, "the far pool is paused to the bit")
	_check(report.get("held", 0) > 0, "the world report counts the pages held back")
	_check(world.get_water_ledger().get("exact", false), "the ledger is exact")
	world.far_step_every = 4
	for i in 30:
		world.step(1.0 / 30.0)
	var far_slow: float = world.get_depth(far)
	print("   one frame in four, 1 s more: far pool %.4f m" % far_slow)
	_check(far_slow < far_after, "the far pool spreads at a quarter of the pace")
	# The focus comes to the far pool, as focus_node now (it counts as a focus too); the near
	# pool is the far one, paused.
	var no_focuses: Array[Node3D] = []
	world.focus_nodes = no_focuses
	var focus_node := Node3D.new()
	root.add_child(focus_node)
	focus_node.global_position = far
	world.focus_node = world.get_path_to(focus_node)
	world.far_step_every = 0
	world.step(1.0 / 30.0)
	var near_paused: float = world.get_depth(near)
	var far_moving: float = world.get_depth(far)
	for i in 30:
		world.step(1.0 / 30.0)
	print("   focus_node at the far pool, paused: near %.4f -> %.4f m, far %.4f -> %.4f m" % [
			near_paused, world.get_depth(near), far_moving, world.get_depth(far)])
	_check(world.get_depth(near) == near_paused, "the pool left behind is paused to the bit")
	_check(world.get_depth(far) < far_moving - 0.01, "the far pool spreads at full pace")
	_check(world.get_water_ledger().get("exact", false), "the ledger is exact")
	world.far_step_every = -1
	world.step(1.0 / 30.0)
	_check(world.get_last_error().contains("far_step_every"),
			"far_step_every -1 is refused: %s" % world.get_last_error())
	world.far_step_every = 1
	world.focus_radius = NAN
	world.step(1.0 / 30.0)
	_check(world.get_last_error().contains("focus_radius"),
			"focus_radius NaN is refused: %s" % world.get_last_error())
	world.focus_radius = 100.0
	world.step(1.0 / 30.0)
	_check(world.get_world_report().get("held", -1) == 0, "far_step_every 1 holds nothing back")
	_check(world.get_water_ledger().get("exact", false), "the ledger is exact")
	focus.free()
	focus_node.free()
	world.free()


## A 2048² world of 1 m cells with a 64-cell window, far water of [param far_cells] cells at
## 16-cell texels in [param levels] levels (2 is the node's default), a 900 m³ lake in the first
## test's basin (a 4 m floor on cells 105..134, walls at 10 m) and its focus at cell (700, 700),
## 800 m from the lake: [world, focus], or [] (the failure checked) when the world could not be
## made.
func _world_with_a_far_lake(far_cells: int, levels: int) -> Array:
	var world := PipeWaterWorld.new()
	world.world_size = Vector2i(2048, 2048)
	world.ground_height = 10.0
	world.running = false
	world.window_cells = 64
	world.far_water_cells = far_cells
	world.far_water_stride = 16
	world.far_water_levels = levels
	root.add_child(world)
	await process_frame
	if not world.is_ready():
		_check(false, "the world exists: %s" % world.get_last_error())
		world.free()
		return []
	var heights := PackedFloat32Array()
	for i in 40 * 40:
		var inside: bool = i % 40 >= 5 and i % 40 < 35 and i / 40 >= 5 and i / 40 < 35
		heights.append(4.0 if inside else 10.0)
	world.set_terrain_region(Rect2i(Vector2i(100, 100), Vector2i(40, 40)), heights)
	world.add_water(Vector3(120.0 - 1024.0, 0.0, 120.0 - 1024.0), 900.0, 14.0)
	var focus := Node3D.new()
	root.add_child(focus)
	focus.global_position = Vector3(700.0 - 1024.0, 0.0, 700.0 - 1024.0)
	world.focus_node = world.get_path_to(focus)
	return [world, focus]


func _test_far_water_is_drawn_beyond_the_window() -> void:
	print("-- far water: a lake 800 m from the focus, outside its 64-cell window")
	var made: Array = await _world_with_a_far_lake(1536, 2)
	if made.is_empty():
		return
	var world: PipeWaterWorld = made[0]
	var focus: Node3D = made[1]
	var cell := func(x: float, y: float) -> Vector3: return Vector3(x - 1024.0, 0.0, y - 1024.0)
	var lake: Vector3 = cell.call(120.0, 120.0)
	for i in 300:
		world.step(1.0 / 30.0)
	world.refresh_window()
	var rect: Rect2 = world.get_window_rect()
	_check(not rect.has_point(Vector2(lake.x, lake.z)),
			"the fine window %s does not reach the lake" % rect)
	var report: Dictionary = world.get_world_report()
	var origin: Vector2i = report.get("far_origin", Vector2i(-1, -1))
	var texels: Vector2i = report.get("far_texels", Vector2i.ZERO)
	print("   far water: %s texels of %d cells from cell %s" % [texels, report.get("far_stride", 0),
			origin])
	_check(texels == Vector2i(96, 96) and origin == Vector2i(0, 0),
			"1536 cells at stride 16 around the focus: 96² texels from the world's corner")
	var texture: ImageTexture = world.far_height_texture
	_check(texture != null and texture.get_size() == Vector2(96, 96)
			and world.far_flux_texture != null,
			"far_height_texture and far_flux_texture hold the 96² texels")
	var image: Image = world.get_far_height_image()
	if image == null:
		_check(false, "get_far_height_image() is there")
		focus.free()
		world.free()
		return
	# Texel 7 covers cells 112..127, all on the basin's floor.
	var texel: Color = image.get_pixel(7, 7)
	# The mean of the queries' depths at the centres of the texel's 256 cells.
	var depth := 0.0
	for y in range(112, 128):
		for x in range(112, 128):
			depth += world.get_depth(cell.call(x + 0.5, y + 0.5)) / 256.0
	print("   far texel over the lake: %s; the mean of the queries' depths over its cells %.6f m" % [
			texel, depth])
	_check(texel.a == 1.0, "every cell of the texel is wet")
	_near(texel.b, 4.0, 1.0e-5, "the ground under the water is the basin's floor")
	_near(texel.g, depth, 1.0e-4, "the texel's depth is the mean of its cells' depths")
	_near(texel.r, 4.0 + texel.g, 1.0e-3, "the surface is the floor plus the depth")
	var volume := 0.0
	for y in 96:
		for x in 96:
			volume += image.get_pixel(x, y).g * 16.0 * 16.0
	_near(volume, 900.0, 0.05, "the far texels hold the lake's 900 m³ (%.4f)" % volume)
	_check(image.get_pixel(40, 40).a == 0.0 and image.get_pixel(40, 40).g == 0.0,
			"dry ground far from the lake reads dry")
	var mesh: MeshInstance3D = world.get_node_or_null("FarWaterSurface")
	_check(mesh != null, "the far water has its own mesh")
	if mesh != null:
		var material := mesh.material_override as ShaderMaterial
		var hole: Vector4 = material.get_shader_parameter("hole") if material != null else Vector4.ZERO
		var at := Vector2(focus.position.x - mesh.position.x, focus.position.z - mesh.position.z)
		print("   far mesh at %s, hole %s (the focus at %s in its space)" % [mesh.position, hole, at])
		_check(at.x > hole.x and at.x < hole.z and at.y > hole.y and at.y < hole.w,
				"the fine window is cut out of the far mesh around the focus")
		_near(hole.z - hole.x, 64.0, 1.0e-4, "the hole is the window's 64 m")
	# Water poured beyond the window shows in the far texture without a refresh: the node reads
	# the far water itself, without waiting, every quarter of a second.
	var pour: Vector3 = cell.call(1400.0, 300.0)
	world.add_water(pour, 400.0, 10.0)
	world.step(0.1)
	var seen := false
	var frames := 0
	while not seen and frames < 3000:
		await process_frame
		frames += 1
		var now: Image = world.get_far_height_image()
		seen = now != null and now.get_pixel(1400 / 16, 300 / 16).g > 0.0
	print("   water poured at cell (1400, 300) shows in the far texture after %d frames" % frames)
	_check(seen, "the node's own reads bring far water in")
	# Bad settings are refused by name; the far water keeps what it had.
	world.far_water_stride = 0
	await process_frame
	_check(world.get_last_error().contains("far_water_stride"),
			"far_water_stride 0 is refused: %s" % world.get_last_error())
	_check(world.far_height_texture != null and world.get_world_report().get("far_stride", 0) == 16,
			"the far water keeps its stride of 16")
	world.far_water_stride = 16
	world.far_water_cells = -16
	await process_frame
	_check(world.get_last_error().contains("far_water_cells"),
			"far_water_cells -16 is refused: %s" % world.get_last_error())
	world.far_water_cells = 65536
	world.far_water_stride = 8
	await process_frame
	var refusal: String = world.get_last_error()
	_check(refusal.contains("far_water_cells") and refusal.contains("8192 texels"),
			"65536 cells at stride 8 (8192 texels) is refused: %s" % world.get_last_error())
	world.far_water_stride = 16
	world.far_water_cells = 0
	await process_frame
	await process_frame
	_check(world.get_node_or_null("FarWaterSurface") == null
			and not world.get_world_report().has("far_origin"), "far_water_cells 0 turns it off")
	_check(world.get_water_ledger().get("exact", false), "the ledger is exact")
	focus.free()
	world.free()


## far_water_levels 2: a second far level, four times as coarse and as wide, draws a lake the
## first level (512 cells around the focus) does not reach; its texels hold the lake's water, its
## mesh has the first level cut out, the first level's material turns into it along its edges
## and the window's into the first level; 5 levels are refused by name and 1 takes the second away.
func _test_a_second_far_level_draws_water_beyond_the_first() -> void:
	print("-- far water in two levels: a lake 800 m from the focus, past the first level's 512 cells")
	var made: Array = await _world_with_a_far_lake(512, 2)
	if made.is_empty():
		return
	var world: PipeWaterWorld = made[0]
	var focus: Node3D = made[1]
	for i in 120:
		world.step(1.0 / 30.0)
	world.refresh_window()
	await process_frame
	var levels: Array = world.get_world_report().get("far_levels", [])
	print("   levels: %s" % [levels])
	_check(levels.size() == 2, "two far levels are read")
	if levels.size() != 2:
		focus.free()
		world.free()
		return
	var first: Dictionary = levels[0]
	var second: Dictionary = levels[1]
	_check(first["stride"] == 16 and second["stride"] == 64 and second["texels"] == Vector2i(32, 32)
			and second["origin"] == Vector2i.ZERO,
			"the second level: 64-cell texels over the whole 2048² world (first %s, second %s)"
			% [first, second])
	var first_end: Vector2i = first["origin"] + first["texels"] * 16
	_check(first["origin"].x > 140 and first["origin"].y > 140,
			"the lake (cells 105..134) lies beyond the first level, which starts at %s" % first["origin"])
	var outer: Image = world.get_far_height_image(1)
	_check(outer != null and outer.get_size() == Vector2i(32, 32)
			and world.get_far_height_image(2) == null and world.get_far_height_image(-1) == null,
			"get_far_height_image(1) is the second level's 32² texels; levels 2 and -1 are null")
	if outer == null:
		focus.free()
		world.free()
		return
	var volume := 0.0
	for y in 32:
		for x in 32:
			volume += outer.get_pixel(x, y).g * 64.0 * 64.0
	print("   the second level's texels hold %.4f m³; texel (1, 1) %s, (2, 2) %s" % [volume,
			outer.get_pixel(1, 1), outer.get_pixel(2, 2)])
	_near(volume, 900.0, 0.05, "the second level holds the lake's 900 m³")
	var inner_volume := 0.0
	var inner: Image = world.get_far_height_image()
	for y in inner.get_height():
		for x in inner.get_width():
			inner_volume += inner.get_pixel(x, y).g * 256.0
	_check(inner_volume == 0.0, "the first level holds none of it (%.4f m³)" % inner_volume)
	var first_mesh: MeshInstance3D = world.get_node_or_null("FarWaterSurface")
	var second_mesh: MeshInstance3D = world.get_node_or_null("FarWaterSurface2")
	_check(first_mesh != null and second_mesh != null, "each level has its mesh")
	if first_mesh != null and second_mesh != null:
		var second_material := second_mesh.material_override as ShaderMaterial
		var hole: Vector4 = second_material.get_shader_parameter("hole")
		var first_rect := Rect2(Vector2(first["origin"]) - Vector2(1024, 1024),
				Vector2(first_end - first["origin"]))
		var hole_rect := Rect2(Vector2(hole.x, hole.y) + Vector2(second_mesh.position.x,
				second_mesh.position.z), Vector2(hole.z - hole.x, hole.w - hole.y))
		print("   second level's hole %s (in the node's space %s); the first level covers %s" % [
				hole, hole_rect, first_rect])
		_check(hole_rect.position.is_equal_approx(first_rect.position)
				and hole_rect.size.is_equal_approx(first_rect.size),
				"the second level's mesh has the first level cut out")
		var first_material := first_mesh.material_override as ShaderMaterial
		var band: Vector4 = first_material.get_shader_parameter("far_blend")
		var outer_band: Variant = second_material.get_shader_parameter("far_blend")
		var window: MeshInstance3D = world.get_node_or_null("WaterSurface")
		var window_material := window.material_override as ShaderMaterial if window != null else null
		var window_band: Variant = window_material.get_shader_parameter("far_blend") \
				if window_material != null else null
		print("   bands: window %s, first level %s, second level %s" % [window_band, band, outer_band])
		_check(window_band == Vector4(16, 16, 16, 16), "the window turns into the first level over a "
				+ "quarter of its 64 cells along each edge (%s m)" % [window_band])
		_check(band == Vector4(128, 128, 128, 128), "the first level turns into the second over two "
				+ "of its texels along each edge (%s m)" % band)
		_check(outer_band == null or outer_band == Vector4.ZERO, "the outermost level has no band")
		var read: Variant = first_material.get_shader_parameter("far_height_texture")
		_check(read is ImageTexture and (read as ImageTexture).get_size() == Vector2(32, 32),
				"the first level's material reads the second level's 32² texels")
	world.far_water_levels = 5
	await process_frame
	_check(world.get_last_error().contains("far_water_levels"),
			"far_water_levels 5 is refused: %s" % world.get_last_error())
	_check(world.get_world_report().get("far_levels", []).size() == 2, "the levels stay as they were")
	world.far_water_levels = 1
	await process_frame
	await process_frame
	_check(world.get_node_or_null("FarWaterSurface2") == null
			and world.get_world_report().get("far_levels", []).size() == 1,
			"far_water_levels 1 takes the second level away")
	_check(world.get_water_ledger().get("exact", false), "the ledger is exact")
	focus.free()
	world.free()


func _test_a_crate_floats_on_a_world_at_its_draft() -> void:
	print("-- a 2 x 1 x 2 m crate of 2000 kg on a PipeWaterBody, dropped where four pages meet in")
	print("   a 3 m pool of a 224² world (its hull's water left empty: the world is the default)")
	var world := PipeWaterWorld.new()
	world.world_size = Vector2i(224, 224)
	world.cell_size = 1.0
	world.ground_height = 10.0
	world.far_water_cells = 0
	world.running = false
	root.add_child(world)
	await process_frame
	_check(world.is_ready(), "the world exists: %s" % world.get_last_error())
	if not world.is_ready():
		world.free()
		return
	var side: int = 56
	var half: int = 112
	# A 48 × 48 m basin with its floor at 0 m around the corner of pages (0, 0) to (1, 1), walls at
	# 10 m; 3 m of water poured on each of its cells.
	var heights := PackedFloat32Array()
	for i in 64 * 64:
		var inside: bool = i % 64 >= 8 and i % 64 < 56 and i / 64 >= 8 and i / 64 < 56
		heights.append(0.0 if inside else 10.0)
	world.set_terrain_region(Rect2i(Vector2i(side - 32, side - 32), Vector2i(64, 64)), heights)
	var poured: float = 0.0
	for y in range(side - 24, side + 24):
		for x in range(side - 24, side + 24):
			poured += world.add_water(Vector3(x + 0.5 - half, 0.0, y + 0.5 - half), 3.0, 0.4)
	_near(poured, 48.0 * 48.0 * 3.0, 0.01, "3 m of water poured on each basin cell")
	var corner := Vector3(side - half, 0.0, side - half)
	var crate: RigidBody3D = _make_crate(corner + Vector3(0.0, 3.6, 0.0), Vector3(2.0, 1.0, 2.0),
			2000.0, null)
	root.add_child(crate)
	world.running = true
	for i in 600:
		await physics_frame
	var hull: Node3D = crate.get_child(1)
	var displaced: float = hull.get(&"displaced_volume")
	var level: float = hull.get(&"water_level")
	var ledger: Dictionary = world.get_water_ledger()
	print("   displaced %.4f m³ (expected 2), crate centre %.4f m, level %.4f m, vertical" % [
			displaced, crate.global_position.y, level]
			+ " speed %.4f m/s; %s" % [crate.linear_velocity.y, ledger])
	# Afloat, the hull displaces its mass in water: 2000 kg / 1000 kg/m³ = 2 m³, a draft of 0.5 m,
	# so its centre sits at the level.
	_near(displaced, 2.0, 0.04, "the floating hull displaces its mass in water (2 %)")
	_near(crate.global_position.y, level, 0.05, "the crate floats half in: a draft of 0.5 m")
	_near(level, 3.0 + 2.0 / (48.0 * 48.0), 0.05, "around the crate the pool stands at 3 m")
	_near(Vector2(crate.global_position.x, crate.global_position.z).distance_to(
			Vector2(corner.x, corner.z)), 0.0, 1.0, "the crate stays at the page corner")
	_check(ledger.get("exact", false), "the ledger is exact")
	_near(ledger.get("held", 0.0), poured, 0.001, "the hull moves water, never adds or takes it")
	_near(world.get_terrain_height(corner + Vector3(0.5, 0.0, 0.5)), 0.0, 1.0e-6,
			"under the hull get_terrain_height is the basin's floor, not the hull")
	await _free(crate)
	world.free()


func _test_detail_waves_cross_page_borders_on_a_world() -> void:
	print("-- detail waves on a world: a ripple where four pages meet, the window following a marker")
	var world := PipeWaterWorld.new()
	world.world_size = Vector2i(300, 300)
	world.running = false
	world.window_cells = 128
	world.far_water_cells = 0
	var marker := Node3D.new()
	root.add_child(world)
	world.add_child(marker)
	await process_frame
	if not world.is_ready():
		_check(false, "the world exists: %s" % world.get_last_error())
		world.free()
		return
	# Pages of 56 cells: (168, 168) is a page corner, 18 cells from the world's centre.
	var corner := Vector3(168.0 - 150.0, 0.0, 168.0 - 150.0)
	marker.position = corner
	world.detail_follow = world.get_path_to(marker)
	var poured: float = world.add_water(corner, 4000.0, 40.0)
	for i in 30:
		world.step(1.0 / 60.0)
	_check(world.detail_waves, "detail_waves is on by default on a world, as on PipeWater")
	world.detail_waves = false
	world.add_ripple(corner, 0.1, 1.0)
	_check(world.get_last_error().is_empty() and not world.add_ripple(corner, 0.1, 1.0),
			"with detail_waves off add_ripple reaches nothing and reports nothing")
	world.detail_waves = true
	var reached: bool = world.add_ripple(corner - Vector3(1.5, 0.0, 1.0), 0.1, 1.0)
	_check(reached, "a ripple by the page corner reaches the detail window: %s"
			% world.get_last_error())
	for i in 90:
		world.step(1.0 / 60.0)
	world.refresh_window()
	# The layer runs on the device: its heights and texels come back with the frames after they
	# are asked for (a frame or two late, as PipeWater's on a GPU). A first pass of get_height
	# asks for the heights of the area read below, refresh_window for the texels; one frame later
	# refresh_window waits for the device, and both then hold that frame.
	for j in 15:
		for i in 15:
			world.get_height(corner + Vector3(-7.0 + i, 0.0, -7.0 + j), true)
	world.step(1.0 / 60.0)
	world.refresh_window()
	# The waves' height on each side of both page borders: get_height with and without them.
	var largest := {}
	for j in 41:
		for i in 41:
			var p := corner + Vector3(-5.0 + i * 0.25, 0.0, -5.0 + j * 0.25)
			var page := Vector2i(int(p.x >= corner.x), int(p.z >= corner.z))
			var wave: float = absf(world.get_height(p, true) - world.get_height(p))
			largest[page] = maxf(largest.get(page, 0.0), wave)
	print("   poured %.0f m³; largest detail height per page around the corner: %s" % [poured,
			largest])
	for page in [Vector2i(0, 0), Vector2i(1, 0), Vector2i(0, 1), Vector2i(1, 1)]:
		_check(largest.get(page, 0.0) > 1.0e-3,
				"the ripple's waves reached page %s (over 1 mm)" % page)
	var texture: ImageTexture = world.detail_texture
	var image: Image = world.get_detail_image()
	var texel_top := 0.0
	if image != null:
		for y in range(0, image.get_height(), 2):
			for x in range(0, image.get_width(), 2):
				texel_top = maxf(texel_top, absf(image.get_pixel(x, y).r))
	print("   detail_texture %s, format %d, largest height texel %.4f m" % [
			image.get_size() if image != null else Vector2i.ZERO,
			image.get_format() if image != null else -1, texel_top])
	_check(texture != null and texture.get_size() == Vector2(256, 256) and image != null
			and image.get_format() == Image.FORMAT_RGBAH and texel_top > 1.0e-3,
			"detail_texture holds the 256² window's waves in half floats")
	var rect: Rect2 = world.get_detail_rect()
	var shown: Rect2 = world.get_window_rect()
	print("   detail window %s inside the drawn window %s" % [rect, shown])
	_check(rect.size.x > 0.0 and shown.encloses(rect) and rect.has_point(Vector2(corner.x, corner.z)),
			"the detail window lies in the drawn window, around the marker")
	var surface := world.get_node("WaterSurface") as MeshInstance3D
	var material := surface.material_override as ShaderMaterial
	_check(material != null and material.get_shader_parameter("detail_on") == 1.0
			and material.get_shader_parameter("detail_texture") == texture,
			"the window's material draws the detail texture")
	# Where the shader reads the texture: its UV at a point of the mesh is (mesh XZ + detail_offset)
	# / detail_period, repeated (water_surface.gdshader, detail_waves()). At detail cell centres
	# around the ripple, the texel found there holds the height get_height(p, true) adds.
	var offset: Vector2 = material.get_shader_parameter("detail_offset")
	var period: float = material.get_shader_parameter("detail_period")
	var n: int = image.get_width() if image != null else 1
	var d := 0.25
	var worst := 0.0
	var top := 0.0
	for k in 21:
		var gx: int = int(floor((corner.x - 1.5 + 150.0) / d)) - 20 + 2 * k
		var gz: int = int(floor((corner.z - 1.0 + 150.0) / d)) + 10 - k
		var p := Vector3((gx + 0.5) * d - 150.0, 0.0, (gz + 0.5) * d - 150.0)
		var uv := (Vector2(p.x - surface.position.x, p.z - surface.position.z) + offset) / period
		var texel: float = image.get_pixel(posmod(int(floor(uv.x * n)), n),
				posmod(int(floor(uv.y * n)), n)).r if image != null else INF
		var wave: float = world.get_height(p, true) - world.get_height(p)
		worst = maxf(worst, absf(texel - wave))
		top = maxf(top, absf(wave))
	print("   the shader's texels against get_height at 21 detail cells (waves up to %.4f m):"
			% top, " largest difference ", worst, " m")
	_check(top > 1.0e-3 and worst < 2.0e-5,
			"the material's offset and period find each cell's texel (to half-float rounding)")
	# Bad input: refused by name, nothing changed.
	_check(not world.add_ripple(Vector3(NAN, 0.0, 0.0), 0.1, 1.0)
			and world.get_last_error().contains("global_position"), "a ripple at NaN is refused")
	_check(not world.add_ripple(corner, 20.0, 1.0) and world.get_last_error().contains("strength"),
			"a ripple of 20 m is refused: %s" % world.get_last_error())
	_check(not world.add_ripple(corner, 0.1, 0.0) and world.get_last_error().contains("radius"),
			"a ripple of radius 0 is refused: %s" % world.get_last_error())
	world.detail_window = 8
	_check(world.detail_window == 256 and world.get_last_error().contains("detail_window"),
			"detail_window = 8 is refused and the property kept: %s" % world.get_last_error())
	world.detail_damping = -1.0
	_check(world.detail_damping == 0.5 and world.get_last_error().contains("detail_damping"),
			"detail_damping = -1 is refused")
	var ledger: Dictionary = world.get_water_ledger()
	_check(ledger.get("exact", false), "the ledger is exact: the waves move no water")
	world.detail_waves = false
	world.step(1.0 / 60.0)
	world.refresh_window()
	var p := corner - Vector3(1.5, 0.0, 1.0)
	_check(world.get_height(p, true) == world.get_height(p)
			and world.detail_texture.get_size() == Vector2(1, 1),
			"turned off, the waves are gone and the texture is one calm texel")
	world.free()


func _test_the_world_demo_runs_and_its_dam_breaks() -> void:
	print("-- the world demo (res://demo/world/world_demo.tscn): 8192², a reservoir, a dam")
	var demo: Node3D = (load("res://demo/world/world_demo.tscn") as PackedScene).instantiate()
	root.add_child(demo)
	await process_frame
	var world: PipeWaterWorld = demo.get_node_or_null("World")
	_check(world != null and world.is_ready(), "the demo made its world")
	if world == null or not world.is_ready():
		demo.free()
		return
	var boat: RigidBody3D = demo.get_node_or_null("Boat")
	var hull: Node3D = boat.get_node_or_null("WaterHull") if boat != null else null
	# The reservoir, poured at once, sloshes metres high in its first seconds and tosses the boat:
	# it is afloat on some frames and thrown clear on others.
	var afloat_frames: int = 0
	var most_displaced: float = 0.0
	var start_y: float = boat.global_position.y if boat != null else 0.0
	var farthest: float = 0.0
	for i in 30:
		await physics_frame
		if hull != null:
			var displaced: float = hull.get(&"displaced_volume")
			afloat_frames += 1 if displaced > 0.1 else 0
			most_displaced = maxf(most_displaced, displaced)
			farthest = maxf(farthest, absf(boat.global_position.y - start_y))
	var ledger: Dictionary = world.get_water_ledger()
	var report: Dictionary = world.get_world_report()
	print("   after 30 physics frames: %s; %s" % [ledger, report])
	_check(ledger.get("added", 0.0) > 5.0e5, "the reservoir was filled (over 5·10⁵ m³)")
	_check(ledger.get("exact", false), "the ledger is exact")
	_check(report.get("watered", 0) < report.get("pages", 0) / 10,
			"a small part of the world's pages holds water fields")
	_check(hull != null, "the demo has its boat")
	print("   the boat: afloat on %d of 30 frames, at most %.3f m³ displaced (1.2 afloat at" % [
			afloat_frames, most_displaced]
			+ " rest), its centre at most %.2f m from where it was put" % farthest)
	_check(afloat_frames >= 5 and most_displaced > 0.6 and farthest < 3.0,
			"the boat floats on the reservoir's waves, neither sinking nor flung off")
	var dam: Vector3 = demo.call("_map_point", demo.call("_river_x", 1, 185.0), 185.0)
	var before: float = world.get_height(dam)
	demo.call("breach_dam")
	world.step(0.0)
	var after: float = world.get_height(dam)
	print("   the dam's crest at its middle: %.2f m before the breach, %.2f m after" % [before,
			after])
	_check(after < before - 10.0, "the breach cuts the dam down")
	demo.free()
