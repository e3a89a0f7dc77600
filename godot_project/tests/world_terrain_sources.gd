extends RefCounted
## PipeWaterWorld.terrain_source, run by [code]test_world.gd[/code] (the [code]world[/code]
## layer), whose checks it counts: a world's ground read from a Terrain3D, an HTerrain and a
## HeightMapShape3D (the addons as stand-ins, res://tests/stand_ins/, as in
## test_terrain_sources.gd) in slices over physics frames, compared with a PipeWater over the
## same source, followed through the source's edits on pages with water and without, and bad
## sources refused.

const TestBase := preload("res://tests/test_base.gd")
const Terrain3DStandIn := preload("res://tests/stand_ins/terrain3d_stand_in.gd")
const HTerrainStandIn := preload("res://tests/stand_ins/hterrain_stand_in.gd")
const HTerrainDataStandIn := preload("res://tests/stand_ins/hterrain_data_stand_in.gd")
## Height of a wall cell, local m (pipewater_core::terrain_source::WALL_HEIGHT).
const WALL := 1.0e6

## The test script that runs this one: its tree, and its checks.
var _t: TestBase


func _init(tests: TestBase) -> void:
	_t = tests


func run() -> void:
	await _test_ground_from_a_terrain3d_read_in_slices()
	await _test_water_steps_on_ground_read_around_it_first()
	await _test_ground_from_an_hterrain_with_holes_as_drains()
	await _test_ground_from_a_height_map_shape_and_its_changes()
	await _test_a_loaded_world_keeps_what_was_dug()
	await _test_bad_terrain_sources_are_refused()


## A Terrain3D stand-in of region_size² vertices a region, 1 m apart, its regions at
## [param locations], the ground 5 − 0.02 u + 0.3 sin(0.11 v) m (falling along +X, rippled along
## Z: every cell differs from its neighbours), a hole on vertex (300, 60).
func _terrain3d_slope(region_size: int, locations: Array) -> Node3D:
	var terrain: Node3D = Terrain3DStandIn.new(region_size, 1.0)
	for location: Vector2i in locations:
		terrain.data.add_flat_region(location, 0.0)
	for region: Resource in terrain.data.get_regions_active():
		var heights := PackedFloat32Array()
		heights.resize(region_size * region_size)
		for j in region_size:
			for i in region_size:
				var u: int = region.location.x * region_size + i
				var v: int = region.location.y * region_size + j
				heights[j * region_size + i] = 5.0 - 0.02 * u + 0.3 * sin(0.11 * v)
		region.height_map = Image.create_from_data(region_size, region_size, false,
				Image.FORMAT_RF, heights.to_byte_array())
	terrain.data.set_control_hole(Vector3(300.0, 0.0, 60.0), true)
	return terrain


## Region locations of an [param across]² square of them, [param gap] left out (a gap; off the
## square: none).
func _regions(across: int, gap: Vector2i) -> Array:
	var locations: Array = []
	for v in across:
		for u in across:
			if Vector2i(u, v) != gap:
				locations.append(Vector2i(u, v))
	return locations


## A node at global [param at] in the tree, [param world]'s focus_node.
func _focus_of(world: PipeWaterWorld, at: Vector3) -> Node3D:
	var focus := Node3D.new()
	_t.root.add_child(focus)
	focus.global_position = at
	world.focus_node = world.get_path_to(focus)
	return focus


## A world of [param cells]² 1 m cells whose cell (x, y) is centred on global (x, 0, y), over
## [param terrain]: vertex (u, v) of a Terrain3D at 1 m lies under cell (u, v).
func _world_over(terrain: Node3D, cells: int, budget_ms: float) -> PipeWaterWorld:
	var world := PipeWaterWorld.new()
	world.world_size = Vector2i(cells, cells)
	world.cell_size = 1.0
	world.ground_height = -50.0
	world.running = false
	world.far_water_cells = 0
	world.terrain_read_budget_ms = budget_ms
	world.position = Vector3(cells / 2.0 - 0.5, 0.0, cells / 2.0 - 0.5)
	_t.root.add_child(world)
	if terrain != null:
		world.terrain_source = world.get_path_to(terrain)
	return world


## Property: a 512² world over a Terrain3D (15 regions of 128², one left out: a gap) is read in
## 128² slices, one a physics frame under a 0.1 ms budget, nearest its focus first, stepping
## meanwhile (dry: nothing to read first); it then holds the same ground as a PipeWater fitted
## over the same Terrain3D, cell for cell (the gap and a hole as walls); water poured on it flows
## downhill;
## an edit of the source on a page with no water reaches the world, and water poured there later
## lies on the edited ground.
func _test_ground_from_a_terrain3d_read_in_slices() -> void:
	print("-- terrain_source: a world over a Terrain3D, read in slices over frames")
	var terrain: Node3D = _terrain3d_slope(128, _regions(4, Vector2i(3, 3)))
	_t.root.add_child(terrain)
	var world := _world_over(terrain, 512, 0.1)
	var focus := _focus_of(world, Vector3(100.0, 0.0, 100.0))
	world.window_cells = 512
	var waited_for_ground: bool = not world.is_terrain_source_read()
	world.step(1.0 / 30.0)
	var refusal: String = world.get_last_error()
	var first: Dictionary = world.get_terrain_source_stats()
	print("   after one call: %s; step: %s" % [first, refusal])
	_t._check(waited_for_ground and refusal.is_empty() and first.get("slices_left", 0) == 15,
			"a dry world steps before its whole ground is in: nothing of it is within the water's reach")
	var first_rect: Rect2i = first.get("last_rect", Rect2i())
	_t._check(first.get("whole_slices", 0) == 16 and first_rect.has_point(Vector2i(100, 100)),
			"16 slices of 128² cells, the first the one under the focus at cell (100, 100)")
	var frames := 0
	while not world.is_terrain_source_read() and frames < 60:
		await _t.physics_frame
		frames += 1
	var stats: Dictionary = world.get_terrain_source_stats()
	print("   read after %d more physics frames: %s" % [frames, stats])
	_t._check(stats.get("read", false) and stats.get("frames", 0) == 16,
			"the whole world was read, one slice a call under the 0.1 ms budget (16 calls)")
	print("   a slice of 16 384 cells took at most %.2f ms; a frame's reading at most %.2f ms" % [
			stats.get("slice_usec_max", 0) / 1000.0, stats.get("frame_usec_max", 0) / 1000.0])
	_t._check(stats.get("frame_usec_max", 0) < 2 * stats.get("slice_usec_max", 0) + 1000,
			"no frame read more than about one slice")

	var water: PipeWater = ClassDB.instantiate(&"PipeWater")
	water.backend = PipeWater.BACKEND_CPU
	water.show_mesh = false
	water.detail_waves = false
	water.paused = true
	water.initial_water_level = -10.0
	_t.root.add_child(water)
	water.terrain_source = water.get_path_to(terrain)
	var fitted: bool = water.fit_to_terrain_source(1)
	print("   PipeWater fitted %s: grid %s at %s; the world at %s" % [fitted, water.grid_size,
			water.global_position, world.global_position])
	var grid_ground: PackedFloat32Array = water.get_terrain_region(Rect2i(0, 0, 512, 512))
	world.refresh_window()
	var image: Image = world.get_height_image()
	var differ := 0
	var worst := 0.0
	var walls := 0
	var compared := 0
	if image != null and image.get_size() == Vector2i(512, 512) and grid_ground.size() == 512 * 512:
		for y in 512:
			for x in 512:
				var a: float = image.get_pixel(x, y).b
				var b: float = grid_ground[y * 512 + x]
				compared += 1
				worst = maxf(worst, absf(a - b))
				differ += 1 if absf(a - b) > 1.0e-4 else 0
				walls += 1 if a >= WALL - 1.0 else 0
	print("   %d cells compared: %d differ by more than 1e-4 m (worst %.6f m); %d walls" % [
			compared, differ, worst, walls])
	_t._check(compared == 512 * 512 and differ == 0,
			"the world holds the PipeWater's ground cell for cell")
	_t._check(walls == 128 * 128 + 1, "the gap's 128² cells and the hole are walls in both")
	_t._near(world.get_terrain_height(Vector3(40.0, 0.0, 7.0)), 5.0 - 0.8 + 0.3 * sin(0.77), 1.0e-4,
			"cell (40, 7) stands where the Terrain3D puts vertex (40, 7)")
	water.free()

	var report: Dictionary = world.get_world_report()
	var pit := Vector3(450.0, 0.0, 40.0)
	var ground_before: float = world.get_terrain_height(pit)
	terrain.data.set_height(pit, ground_before - 3.0)
	terrain.data.maps_edited.emit(AABB(pit - Vector3(0.0, 100.0, 0.0), Vector3(0.0, 200.0, 0.0)))
	world.step(1.0 / 30.0)
	var ground_after: float = world.get_terrain_height(pit)
	var edit_stats: Dictionary = world.get_terrain_source_stats()
	print(("   with %d of %d pages resident (no water yet), vertex (450, 40) dug 3 m:"
			+ " %.4f -> %.4f m, rect %s") % [
			report.get("resident", -1), report.get("pages", -1), ground_before, ground_after,
			edit_stats.get("last_rect", Rect2i())])
	_t._check(report.get("resident", -1) == 0, "no page of the dry world is resident")
	_t._near(ground_after, ground_before - 3.0, 1.0e-4, "the edit reached the world's ground there")
	var poured: float = world.add_water(pit, 1.0, 0.0)
	for i in 60:
		world.step(1.0 / 30.0)
	var pit_depth: float = world.get_depth(pit)
	var beside: float = world.get_depth(pit + Vector3(1.0, 0.0, 0.0))
	var after_pour: Dictionary = world.get_world_report()
	print("   %.3f m³ poured into the pit: %.4f m deep, %.4f m beside it; %d pages resident" % [
			poured, pit_depth, beside, after_pour.get("resident", -1)])
	_t._near(pit_depth, 1.0, 1.0e-3, "the 1 m³ stays in the 1 m² pit: the page came in with the edit")
	_t._check(beside == 0.0 and after_pour.get("resident", 0) > 0, "and nothing left it")

	world.add_water(Vector3(100.0, 0.0, 100.0), 20.0, 2.0)
	for i in 900:
		world.step(1.0 / 30.0)
	var volume := 0.0
	var moment := 0.0
	var reach := Vector2(100.0, 100.0)
	for y in range(40, 161):
		for x in range(20, 301):
			var depth: float = world.get_depth(Vector3(x, 0.0, y))
			if depth > 1.0e-4:
				volume += depth
				moment += depth * x
				reach = Vector2(minf(reach.x, x), maxf(reach.y, x))
	var centre: float = moment / volume if volume > 0.0 else NAN
	var ledger: Dictionary = world.get_water_ledger()
	print(("   20 m³ poured at cell (100, 100), 30 s later: %.3f m³ in cells 20..300 × 40..160,"
			+ " its centre at x = %.2f, wet from x = %.0f to %.0f; ledger %s") % [
			volume, centre, reach.x, reach.y, ledger])
	_t._check(centre > 105.0 and reach.y - 100.0 > 2.0 * (100.0 - reach.x),
			"the water ran down the Terrain3D's slope (+X): its centre moved downhill, and it"
			+ " reached twice as far downhill as uphill")
	_t._check(ledger.get("exact", false), "the ledger is exact")
	world.free()
	focus.free()
	terrain.free()


## Property: water poured on a world whose ground is still being read steps at once, on the
## source's ground: before each frame the slices within its reach are read (over the budget),
## while the slice farthest from it and from the focus stays unread (the world's ground_height
## there); every wet cell stands on the source's ground as the water runs down the slope; the
## rest of the ground comes in behind, one slice a frame, and terrain_source_read is emitted once.
func _test_water_steps_on_ground_read_around_it_first() -> void:
	print("-- terrain_source: water steps on the ground read around it first")
	var terrain: Node3D = _terrain3d_slope(128, _regions(8, Vector2i(-1, -1)))
	_t.root.add_child(terrain)
	var world := _world_over(terrain, 1024, 0.1)
	var focus := _focus_of(world, Vector3(100.0, 0.0, 100.0))
	var signals: Array = []
	world.terrain_source_read.connect(func() -> void: signals.append(true))
	var source_ground := func(x: float, y: float) -> float:
		return 5.0 - 0.02 * x + 0.3 * sin(0.11 * y)
	var spot := Vector3(800.0, 0.0, 300.0)
	var far_unread := Vector3(1000.0, 0.0, 1000.0)
	var poured: float = world.add_water(spot, 30.0, 3.0)
	world.step(1.0 / 30.0)
	var first: Dictionary = world.get_terrain_source_stats()
	print(("   %.1f m³ poured at cell (800, 300); after one step: %d of %d slices left,"
			+ " error '%s'; ground under it %.4f m (source %.4f)") % [
			poured, first.get("slices_left", 0), first.get("whole_slices", 0), world.get_last_error(),
			world.get_terrain_height(spot), source_ground.call(800.0, 300.0)])
	_t._check(world.get_last_error().is_empty() and not world.is_terrain_source_read(),
			"the world stepped before its whole ground was in")
	_t._near(world.get_terrain_height(spot), source_ground.call(800.0, 300.0), 1.0e-4,
			"the ground under the poured water is the source's")
	_t._check(first.get("slices_left", 0) < 64 - 2,
			"the slices within the water's reach were read besides the focus's one (%d of 64 left)"
			% first.get("slices_left", 0))
	var worst := 0.0
	var wet_checked := 0
	for i in 30:
		world.step(1.0 / 30.0)
	for y in range(240, 361):
		for x in range(740, 1024):
			var p := Vector3(x, 0.0, y)
			if world.get_depth(p) > 1.0e-4:
				wet_checked += 1
				worst = maxf(worst, absf(world.get_terrain_height(p) - source_ground.call(x, y)))
	var ledger: Dictionary = world.get_water_ledger()
	var during: Dictionary = world.get_terrain_source_stats()
	print(("   1 s later: %d wet cells checked, the worst ground %.6f m from the source's;"
			+ " ledger exact %s; %d slices left; cell (1000, 1000) %.4f m") % [
			wet_checked, worst, ledger.get("exact", false), during.get("slices_left", 0),
			world.get_terrain_height(far_unread)])
	_t._check(wet_checked > 100 and worst < 1.0e-4, "every wet cell stands on the source's ground")
	_t._check(ledger.get("exact", false), "the ledger is exact")
	_t._near(world.get_terrain_height(far_unread), -50.0, 1.0e-4,
			"the slice farthest from the water and the focus is not read yet (ground_height)")
	var frames := 0
	while not world.is_terrain_source_read() and frames < 100:
		await _t.physics_frame
		frames += 1
	print(("   the rest read in %d physics frames; terrain_source_read emitted %d times;"
			+ " cell (1000, 1000) %.4f m") % [
			frames, signals.size(), world.get_terrain_height(far_unread)])
	_t._check(world.is_terrain_source_read() and signals.size() == 1,
			"the rest of the ground came in behind, terrain_source_read emitted once")
	_t._near(world.get_terrain_height(far_unread), source_ground.call(1000.0, 1000.0), 1.0e-4,
			"and the far slice holds the source's ground")
	world.free()
	focus.free()
	terrain.free()


## Property: a world over an HTerrain (a 129² map, 2 m a pixel, heights × 2, moved) holds the
## ground HTerrain's transform gives; holes painted in its color map drain at their rim with
## TERRAIN_HOLES_DRAIN, and water poured beside one leaves through it, the ledger exact; a
## region_changed of the height channel reaches the world; saved and loaded, the world knows its
## hole drains, and an edit over the hole replaces them instead of doubling them.
func _test_ground_from_an_hterrain_with_holes_as_drains() -> void:
	print("-- terrain_source: a world over an HTerrain, holes as drains")
	var data: Resource = HTerrainDataStandIn.new(129, 1.0)
	for i in 5:
		for j in 3:
			data.get_image(HTerrainDataStandIn.CHANNEL_COLOR).set_pixel(60 + i, 60 + j, Color(1, 1, 1, 0))
	var terrain: Node3D = HTerrainStandIn.new(data)
	terrain.map_scale = Vector3(2.0, 2.0, 2.0)
	terrain.position = Vector3(-1.0, 0.0, -1.0)
	_t.root.add_child(terrain)
	# Pixel (u, v) at global (2u − 1, 2 h, 2v − 1): the world's 2 m cells centred on them (its
	# corner at −2 m, so cell (x, y) is centred on pixel (x, y)).
	var world := PipeWaterWorld.new()
	world.world_size = Vector2i(128, 128)
	world.cell_size = 2.0
	world.ground_height = -50.0
	world.running = false
	world.far_water_cells = 0
	world.terrain_holes = PipeWater.TERRAIN_HOLES_DRAIN
	world.position = Vector3(126.0, 0.0, 126.0)
	_t.root.add_child(world)
	world.terrain_source = world.get_path_to(terrain)
	var baked: bool = world.bake_terrain()
	var stats: Dictionary = world.get_terrain_source_stats()
	var cell := func(x: int, y: int) -> float:
		return world.get_terrain_height(Vector3(2.0 * x - 1.0, 0.0, 2.0 * y - 1.0))
	print(("   bake_terrain %s: %s; cell (10, 10) %.4f m, rim (60, 61) %.4f m,"
			+ " inner (62, 61) %.1f m") % [
			baked, stats, cell.call(10, 10), cell.call(60, 61), cell.call(62, 61)])
	_t._check(baked and stats.get("read", false), "bake_terrain() reads the whole world at once")
	_t._near(cell.call(10, 10), 2.0, 1.0e-4, "the map's 1 m stands at 2 m (map_scale.y 2)")
	_t._near(cell.call(62, 61), WALL, 1.0, "a cell inside the painted hole is a wall")
	_t._near(cell.call(60, 61), 2.0, 1.0e-4, "a rim cell keeps the ground beside it")
	_t._check(stats.get("drains", 0) == 5 * 3 - 3,
			"the hole's 12 rim cells drain (its 3 inner cells are walls): %d" % stats.get("drains", 0))
	var poured: float = world.add_water(Vector3(2.0 * 57.0 - 1.0, 0.0, 2.0 * 61.0 - 1.0), 20.0, 3.0)
	for i in 240:
		world.step(1.0 / 30.0)
	var ledger: Dictionary = world.get_water_ledger()
	print("   %.3f m³ poured beside the hole; 8 s later %s" % [poured, ledger])
	_t._check(ledger.get("removed", 0.0) > 1.0, "water that reached the hole's rim was drained")
	_t._check(ledger.get("exact", false), "the ledger is exact with the drains")
	data.get_image(HTerrainDataStandIn.CHANNEL_HEIGHT).set_pixel(100, 20, Color(4.0, 0, 0))
	data.notify_region_change(Rect2i(100, 20, 1, 1), HTerrainDataStandIn.CHANNEL_HEIGHT)
	world.step(0.0)
	print("   region_changed of pixel (100, 20) to 4 m: cell %.4f m" % cell.call(100, 20))
	_t._near(cell.call(100, 20), 8.0, 1.0e-4, "the HTerrain's edit reached the world")
	# Saved and loaded, the hole's drains are the link's again: an edit over the hole replaces
	# them, it does not place a second drain beside each saved one.
	var sources_saved: int = world.get_world_report().get("sources", -1)
	var loaded: bool = world.load_state(world.save_state())
	var drains_loaded: int = world.get_terrain_source_stats().get("drains", -1)
	data.get_image(HTerrainDataStandIn.CHANNEL_HEIGHT).set_pixel(61, 61, Color(1.5, 0, 0))
	data.notify_region_change(Rect2i(58, 58, 9, 7), HTerrainDataStandIn.CHANNEL_HEIGHT)
	world.step(0.0)
	var sources_after: int = world.get_world_report().get("sources", -1)
	var drains_after: int = world.get_terrain_source_stats().get("drains", -1)
	print(("   saved with %d sources; loaded %s with %d hole drains; after an edit over the"
			+ " hole %d sources, %d hole drains") % [
			sources_saved, loaded, drains_loaded, sources_after, drains_after])
	_t._check(loaded and sources_saved == 12 and drains_loaded == 12,
			"the loaded world's 12 drains are known as the hole's (%d of %d)" % [
				drains_loaded, sources_saved])
	_t._check(sources_after == 12 and drains_after == 12,
			"an edit over the hole after the load replaces its drains, no second set: %d sources"
			% sources_after)
	world.free()
	terrain.free()


## Property: a world over a CollisionShape3D holding a 64² HeightMapShape3D, each cell on a
## vertex, holds the shape's heights once read over the physics frames; changing one value of
## map_data (the shape's changed) reaches its cell alone at the next physics frame.
func _test_ground_from_a_height_map_shape_and_its_changes() -> void:
	print("-- terrain_source: a world over a HeightMapShape3D")
	var map := HeightMapShape3D.new()
	map.map_width = 64
	map.map_depth = 64
	var values := PackedFloat32Array()
	for j in 64:
		for i in 64:
			values.append(0.1 * i - 0.05 * j)
	map.map_data = values
	var shape := CollisionShape3D.new()
	shape.shape = map
	var body := StaticBody3D.new()
	body.position = Vector3(20.0, 1.0, -8.0)
	body.add_child(shape)
	_t.root.add_child(body)
	var world := PipeWaterWorld.new()
	world.world_size = Vector2i(64, 64)
	world.ground_height = -50.0
	world.running = false
	world.far_water_cells = 0
	world.position = Vector3(20.0, 0.0, -8.0)
	_t.root.add_child(world)
	world.terrain_source = world.get_path_to(shape)
	var frames := 0
	while not world.is_terrain_source_read() and frames < 10:
		await _t.physics_frame
		frames += 1
	# Cell (x, y) is centred on vertex (x, y): global (x − 11.5, ·, y − 39.5).
	var cell := func(x: int, y: int) -> float:
		return world.get_terrain_height(Vector3(x - 11.5, 0.0, y - 39.5))
	var worst := 0.0
	for y in range(0, 64, 3):
		for x in range(0, 64, 3):
			worst = maxf(worst, absf(cell.call(x, y) - (1.0 + 0.1 * x - 0.05 * y)))
	print("   read in %d physics frames: %s; worst of 484 cells against the shape: %.6f m" % [
			frames, world.get_terrain_source_stats(), worst])
	_t._check(world.is_terrain_source_read() and worst < 1.0e-4,
			"every cell holds its vertex's height, raised by the body's 1 m")
	var before: Dictionary = world.get_terrain_source_stats()
	values[20 * 64 + 10] = 7.0
	map.map_data = values
	await _t.physics_frame
	var after: Dictionary = world.get_terrain_source_stats()
	var rect: Rect2i = after.get("last_rect", Rect2i())
	print("   map_data (10, 20) set to 7 m: cell %.4f m, rect %s, reads %d -> %d" % [cell.call(10, 20),
			rect, before.get("reads", 0), after.get("reads", 0)])
	_t._near(cell.call(10, 20), 8.0, 1.0e-4, "the changed value reaches its cell")
	_t._check(after.get("reads", 0) == before.get("reads", 0) + 1 and rect.get_area() <= 16,
			"only the rectangle that changed was read (≤ 4 × 4 cells)")
	_t._near(cell.call(12, 20), 1.0 + 1.2 - 1.0, 1.0e-4, "a cell beside it keeps its ground")
	world.free()
	body.free()


## Property: a world loaded from its save keeps the ground the save holds (what the game dug
## over the source's ground) and steps at once, without reading the source whole again; it
## follows the source's edits from then on, and bake_terrain() reads the source again.
func _test_a_loaded_world_keeps_what_was_dug() -> void:
	print("-- terrain_source: a loaded world keeps what was dug")
	var terrain: Node3D = _terrain3d_slope(64, [Vector2i(0, 0), Vector2i(1, 0), Vector2i(0, 1),
			Vector2i(1, 1)])
	_t.root.add_child(terrain)
	var world := _world_over(terrain, 128, 4.0)
	world.bake_terrain()
	var pit := Vector3(30.0, 0.0, 30.0)
	var source_ground: float = world.get_terrain_height(pit)
	world.modify_terrain(pit, -2.0, 3.0)
	var dug: float = world.get_terrain_height(pit)
	var bytes: PackedByteArray = world.save_state()
	var before: Dictionary = world.get_terrain_source_stats()
	var loaded: bool = world.load_state(bytes)
	world.clear_last_error()
	var ready_at_once: bool = world.is_terrain_source_read()
	world.step(0.1)
	var after: Dictionary = world.get_terrain_source_stats()
	print("   source %.4f m, dug %.4f m; loaded %s: %.4f m, read at once %s, reads %d -> %d, %s" % [
			source_ground, dug, loaded, world.get_terrain_height(pit), ready_at_once,
			before.get("reads", 0), after.get("reads", 0), world.get_last_error()])
	_t._check(loaded and absf(dug - (source_ground - 2.0)) < 1.0e-4,
			"2 m were dug and the world loaded")
	_t._near(world.get_terrain_height(pit), dug, 1.0e-4, "the loaded world keeps the dug ground")
	_t._check(ready_at_once and world.get_last_error().is_empty()
			and after.get("reads", 0) == before.get("reads", 0),
			"it steps at once, the source not read whole again")
	var far := Vector3(100.0, 0.0, 100.0)
	terrain.data.set_height(far, 9.0)
	terrain.data.maps_edited.emit(AABB(far - Vector3(0.0, 100.0, 0.0), Vector3(0.0, 200.0, 0.0)))
	world.step(0.1)
	_t._near(world.get_terrain_height(far), 9.0, 1.0e-4, "the source's edits reach the loaded world")
	var baked: bool = world.bake_terrain()
	_t._near(world.get_terrain_height(pit), source_ground, 1.0e-4,
			"bake_terrain() %s reads the source again, undoing the dig" % baked)
	world.free()
	terrain.free()


## Property: each bad source is refused with an error naming it, and the world keeps the ground
## it has and steps on it (nothing waits for a source that will not come); a source's heights
## that are not finite are read as walls and reported.
func _test_bad_terrain_sources_are_refused() -> void:
	print("-- terrain_source: bad sources")
	var plain := Node3D.new()
	_t.root.add_child(plain)
	var world := _world_over(plain, 128, 4.0)
	world.step(0.1)
	var error: String = world.get_last_error()
	print("   a plain Node3D: %s" % error)
	_t._check(error.contains("is none of") and world.is_terrain_source_read(),
			"a node of the wrong kind is refused, and the world does not wait for it")
	_t._near(world.get_terrain_height(Vector3(10.0, 0.0, 10.0)), -50.0, 1.0e-6,
			"the world keeps its own ground")
	world.clear_last_error()
	var body := StaticBody3D.new()
	var shape := CollisionShape3D.new()
	shape.shape = BoxShape3D.new()
	body.add_child(shape)
	_t.root.add_child(body)
	world.terrain_source = world.get_path_to(body)
	world.step(0.1)
	print("   static geometry: %s" % world.get_last_error())
	_t._check(world.get_last_error().contains("static geometry"),
			"static geometry (which PipeWater bakes by rays) is refused by a world")
	world.terrain_source = NodePath("../NoSuchTerrain")
	world.step(0.1)
	print("   no node: %s" % world.get_last_error())
	_t._check(world.get_last_error().contains("no node at"), "a path to no node is refused")
	world.free()
	body.free()
	plain.free()

	var small: Node3D = _terrain3d_slope(64, [Vector2i(0, 0), Vector2i(1, 0), Vector2i(0, 1),
			Vector2i(1, 1)])
	_t.root.add_child(small)
	var large := _world_over(small, 160, 4.0)
	large.step(0.1)
	print("   a 128² Terrain3D under a 160² world: %s" % large.get_last_error())
	_t._check(large.get_last_error().contains("past the source's"),
			"a source smaller than the world is refused with the vertices it would need")
	_t._near(large.get_terrain_height(Vector3(10.0, 0.0, 10.0)), -50.0, 1.0e-6,
			"the world keeps its own ground")
	_t._check(large.is_terrain_source_read() and large.get_water_ledger().get("exact", false),
			"and steps on it")
	large.free()

	var regions: Array = small.data.get_regions_active()
	regions[0].height_map.set_pixel(10, 12, Color(NAN, 0, 0))
	var world_nan := _world_over(small, 128, 4.0)
	var read: bool = world_nan.bake_terrain()
	print("   a NaN height on vertex (10, 12): read %s, cell %.1f m: %s" % [read,
			world_nan.get_terrain_height(Vector3(10.0, 0.0, 12.0)), world_nan.get_last_error()])
	_t._check(read and world_nan.get_last_error().contains("1 heights") and
			world_nan.get_last_error().contains("not finite"), "a NaN height is reported")
	_t._near(world_nan.get_terrain_height(Vector3(10.0, 0.0, 12.0)), WALL, 1.0,
			"and its cell is a wall")
	_t._near(world_nan.get_terrain_height(Vector3(11.0, 0.0, 12.0)), 5.0 - 0.22 + 0.3 * sin(1.32),
			1.0e-4, "its neighbour keeps the source's ground")
	world_nan.clear_last_error()
	small.free()
	world_nan.step(0.1)
	var freed_error: String = world_nan.get_last_error()
	print("   the source freed: %s" % freed_error)
	_t._check(freed_error.contains("was freed") and world_nan.is_terrain_source_read(),
			"a freed source is reported, and the world does not wait for it")
	world_nan.add_water(Vector3(40.0, 0.0, 40.0), 5.0, 3.0)
	world_nan.step(0.5)
	_t._check(world_nan.get_depth(Vector3(40.0, 0.0, 40.0)) > 0.0
			and world_nan.get_water_ledger().get("exact", false),
			"the world steps on the ground it read, the ledger exact")
	_t._near(world_nan.get_terrain_height(Vector3(11.0, 0.0, 12.0)), 5.0 - 0.22 + 0.3 * sin(1.32),
			1.0e-4, "and keeps that ground")
	world_nan.free()
