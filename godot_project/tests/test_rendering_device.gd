extends "res://tests/test_base.gd"
## Tests of the RenderingDevice backend: the step on Godot's own GPU device.
##
## Needs a renderer with a RenderingDevice (Forward+ or Mobile), so it runs in a window, e.g.
## under Xvfb with Mesa's software Vulkan:
## [codeblock]
## xvfb-run -a $GODOT --rendering-driver vulkan --path godot_project --fixed-fps 60 \
##     -s res://tests/test_rendering_device.gd
## [/codeblock]
## Headless (no RenderingDevice) it prints one SKIP line and passes. Every check prints the
## property it states and the figures it compares; the run ends with PIPEWATER TESTS PASSED or
## PIPEWATER TESTS FAILED.

## Largest depth difference between the RenderingDevice and CPU backends after the same steps,
## m: the GPU agreement tolerance of pipewater-core's tests (a GPU may fuse multiply-adds; the
## software Vulkan rasteriser usually matches the CPU exactly).
const MAX_DEPTH_DIFFERENCE := 2.0e-3
## Volumes agree within this (m³): edits round to whole depth quanta of 2⁻²⁰ m per cell.
const VOLUME_TOLERANCE := 1.0e-3
## Frames a query may wait for its tile's first read (the read latency plus the frame that
## records the read).
const QUERY_FRAMES := 6
## Frames run before a state is saved, and frames run after it (twice: after the save and after
## loading it back).
const FRAMES_BEFORE_SAVE := 30
const FRAMES_AFTER_SAVE := 40
## Points (global, on the 64×48 grid of the save tests) whose heights are recorded every frame.
const SAVE_PROBE_POINTS: Array[Vector3] = [
	Vector3(-20, 0, -4), Vector3(-12, 0, 6), Vector3(4, 0, 0), Vector3(18, 0, -10), Vector3(30, 0, 20),
]


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	print("PipeWater RenderingDevice tests, Godot %s" % Engine.get_version_info().string)
	if RenderingServer.get_rendering_device() == null:
		print("SKIP: RenderingDevice tests (this renderer has none: run in a window with "
				+ "--rendering-driver vulkan, e.g. under xvfb-run)")
		print("PIPEWATER TESTS PASSED")
		quit(0)
		return
	await _test_auto_picks_the_rendering_device_and_textures_stay_on_the_gpu()
	await _test_queries_arrive_within_the_documented_frames()
	await _test_a_dam_break_agrees_with_the_cpu_backend()
	await _test_edits_sources_and_the_ledger_are_exact()
	await _test_a_stroke_and_its_undo_are_exact_on_the_rendering_device()
	await _test_switching_backends_keeps_the_water()
	await _test_a_probe_body_floats_and_the_surface_material_reads_the_gpu_textures()
	await _test_a_hull_floats_and_pushes_water_on_the_rendering_device()
	await _test_load_state_replays_the_same_frames_on_the_rendering_device()
	await _test_async_save_and_load_on_the_rendering_device_match_the_synchronous_ones()
	await _test_a_state_saved_on_the_rendering_device_loads_on_the_cpu()
	await _test_a_wrong_size_state_is_refused_and_the_water_is_kept()
	await _test_a_state_loaded_while_reads_are_in_flight_never_answers_with_old_water()
	await _test_a_lost_rendering_device_moves_the_water_to_wgpu()
	await _test_a_lost_rendering_device_gives_back_water_and_terrain_no_query_read()
	await _test_detail_waves_run_on_the_gpu_into_a_texture2drd()
	await _test_lava_sets_on_the_rendering_device_as_on_the_cpu()
	await preload("res://tests/rendering_device_sync.gd").new(self).run()
	await _test_rebuilds_and_frees_leave_nothing_behind()
	_finish()


func _make_water(backend: int, size: Vector2i, level: float) -> PipeWater:
	var water: PipeWater = ClassDB.instantiate(&"PipeWater")
	water.backend = backend
	water.grid_size = size
	water.cell_size = 1.0
	water.initial_water_level = level
	water.damping = 0.0
	water.paused = true
	root.add_child(water)
	water.rebuild()
	await process_frame
	return water


## A basin whose west third holds 2 m of water behind a dam that is then removed.
func _dam_terrain(size: Vector2i) -> PackedFloat32Array:
	var heights := PackedFloat32Array()
	for y in size.y:
		for x in size.x:
			heights.append(0.05 * sin(0.3 * x) * cos(0.2 * y) + (5.0 if x == size.x / 3 else 0.0))
	return heights


func _frames(n: int) -> void:
	for i in n:
		await process_frame


func _test_auto_picks_the_rendering_device_and_textures_stay_on_the_gpu() -> void:
	print("-- BACKEND_AUTO in a renderer with a RenderingDevice")
	var water: PipeWater = await _make_water(PipeWater.BACKEND_AUTO, Vector2i(64, 48), 1.5)
	_check(water.active_backend == PipeWater.BACKEND_RENDERING_DEVICE,
			"active_backend is BACKEND_RENDERING_DEVICE (got %d: %s)" % [
				water.active_backend, water.get_backend_description()])
	_check(water.height_texture is Texture2DRD and water.flux_texture is Texture2DRD,
			"height_texture and flux_texture are Texture2DRDs (%s, %s)" % [
				water.height_texture.get_class(), water.flux_texture.get_class()])
	water.paused = false
	await _frames(3)
	var image: Image = water.get_height_image()
	_check(image != null and image.get_size() == Vector2i(64, 48),
			"the texture is 64×48 (%s)" % [image.get_size() if image else null])
	if image != null:
		_check(image.get_format() == Image.FORMAT_RGBAF, "its format is FORMAT_RGBAF")
		var texel: Color = image.get_pixel(10, 20)
		_near(texel.r, 1.5, 1.0e-4, "texel (10, 20): surface height")
		_near(texel.g, 1.5, 1.0e-4, "texel (10, 20): depth")
		_near(texel.a, 1.0, 0.0, "texel (10, 20): wet")
	var stats: Dictionary = water.get_frame_stats()
	var small: int = stats.get("readback_bytes", -1)
	_check(small >= 0 and small < 64 * 48 * 32,
			"a frame reads back less than the grid's texels (%d bytes, grid %d)" % [small, 64 * 48 * 32])
	water.queue_free()
	await process_frame


## A still pool of lava 0.2 m deep setting at 1 cm/s for 60 frames, then held (cooling off) while
## queries catch up: on the RenderingDevice (cooling.wgsl) as much sets as on the CPU, to the
## quantum, the ledger balances with the solidified volume in it, and the ground under the pool
## rose by the depth that set.
func _test_lava_sets_on_the_rendering_device_as_on_the_cpu() -> void:
	print("-- a still pool of lava setting for 60 frames, RenderingDevice vs CPU")
	var results := []
	for backend: int in [PipeWater.BACKEND_RENDERING_DEVICE, PipeWater.BACKEND_CPU]:
		var water: PipeWater = await _make_water(backend, Vector2i(32, 24), 0.2)
		var lava := PipeWaterFluid.new()
		lava.apply_preset(PipeWaterFluid.PRESET_LAVA)
		lava.solidify_rate = 0.01
		water.fluid = lava
		water.paused = false
		await _frames(60)
		lava.solidify_rate = 0.0
		var point := Vector3(3, 0, 2)
		water.get_terrain_height(point)
		await _frames(QUERY_FRAMES)
		var ledger: Dictionary = water.get_water_ledger()
		var solidified: float = water.get_solidified_volume()
		var rise: float = water.get_terrain_height(point)
		print("   %s: solidified %.9f m³, ground at %s rose %.9f m; ledger %s" % [
				water.get_backend_description(), solidified, point, rise, ledger])
		_near(ledger["total"], ledger["expected"], 1.0e-9,
				"%s: total = expected, solidified counted" % backend)
		_near(ledger["solidified"], solidified, 1.0e-12,
				"%s: the ledger's solidified is the node's" % backend)
		results.append([solidified, rise])
		water.queue_free()
		await process_frame
	_check(results[0][0] > 0.0, "lava set on the RenderingDevice (%.6f m³)" % results[0][0])
	_near(results[0][0], results[1][0], 1.0e-9, "the RenderingDevice set as much as the CPU")
	_near(results[0][1], results[1][1], 1.0e-9, "and the ground rose as far (%.6f m)" % results[1][1])
	_near(results[0][1] * 32 * 24, results[0][0], 1.0e-6,
			"the rise over the pool is the volume that set")


func _test_queries_arrive_within_the_documented_frames() -> void:
	print("-- a query on a tile nobody asked for yet")
	var water: PipeWater = await _make_water(PipeWater.BACKEND_RENDERING_DEVICE, Vector2i(96, 96), 1.0)
	water.paused = false
	water.add_water(Vector3(20, 0, 20), 400.0, 4.0)
	var point := Vector3(20, 0, 20)
	var first: float = water.get_depth(point)
	var seen := first
	var frames := 0
	while frames < QUERY_FRAMES and seen < 1.5:
		await process_frame
		frames += 1
		seen = water.get_depth(point)
	_check(seen > 1.5, "after %d frames the query sees the added water (first %.3f m, then %.3f m)" % [
			frames, first, seen])
	var stats: Dictionary = water.get_frame_stats()
	print("   frame stats: %s" % stats)
	var per_frame: int = stats.get("readback_bytes", -1)
	var big: PipeWater = await _make_water(PipeWater.BACKEND_RENDERING_DEVICE, Vector2i(384, 384), 1.0)
	big.paused = false
	big.get_depth(point)
	await _frames(3)
	big.get_depth(point)
	var big_bytes: int = big.get_frame_stats().get("readback_bytes", -1)
	_check(per_frame == big_bytes and per_frame > 0,
			"bytes read back per frame do not grow with the grid: %d at 96², %d at 384²" % [
				per_frame, big_bytes])
	water.queue_free()
	big.queue_free()
	await process_frame


func _test_a_dam_break_agrees_with_the_cpu_backend() -> void:
	print("-- a dam break, 200 steps of 1/120 s, RenderingDevice vs CPU")
	var size := Vector2i(72, 40)
	var results: Array[Image] = []
	var totals: Array[float] = []
	for backend: int in [PipeWater.BACKEND_CPU, PipeWater.BACKEND_RENDERING_DEVICE]:
		var water: PipeWater = await _make_water(backend, size, 2.0)
		water.terrain_heights = _dam_terrain(size)
		water.rebuild()
		water.modify_terrain(Vector3(size.x / 3.0 - size.x / 2.0 + 0.5, 0, 0), -5.0, 60.0)
		for i in 200:
			water.step(1.0 / 120.0)
		await _frames(4)
		results.append(water.get_height_image())
		totals.append(water.get_total_water())
		water.queue_free()
		await process_frame
	var worst := 0.0
	var deepest := 0.0
	for y in size.y:
		for x in size.x:
			var a: float = results[0].get_pixel(x, y).g
			var b: float = results[1].get_pixel(x, y).g
			worst = maxf(worst, absf(a - b))
			deepest = maxf(deepest, a)
	_check(worst <= MAX_DEPTH_DIFFERENCE,
			"largest depth difference %.7f m ≤ %.4f m (deepest water %.3f m)" % [
				worst, MAX_DEPTH_DIFFERENCE, deepest])
	_near(totals[1], totals[0], VOLUME_TOLERANCE, "total water agrees")


func _test_edits_sources_and_the_ledger_are_exact() -> void:
	print("-- edits, a source, a drain, open and inflow edges for 90 frames")
	var water: PipeWater = await _make_water(PipeWater.BACKEND_RENDERING_DEVICE, Vector2i(80, 64), 0.8)
	water.boundary_east = PipeWater.BOUNDARY_OPEN
	water.boundary_west = PipeWater.BOUNDARY_INFLOW
	water.inflow_rate_west = 3.0
	water.paused = false
	water.add_source(Vector3(-10, 0, 5), 2.0, 2.0)
	water.add_drain(Vector3(10, 0, -5), 1.0, 2.0)
	for i in 90:
		if i % 10 == 0:
			water.add_water(Vector3(i * 0.3 - 12.0, 0, 8), 5.0, 3.0)
			water.remove_water(Vector3(-i * 0.2, 0, -8), 2.0, 2.0)
			water.modify_terrain(Vector3(0, 0, i * 0.1 - 4.0), 0.3, 2.0)
		await process_frame
	var ledger: Dictionary = water.get_water_ledger()
	print("   ledger: %s" % ledger)
	_near(ledger["total"], ledger["expected"], VOLUME_TOLERANCE, "ledger: total = expected")
	_check(ledger["boundary_in"] > 0.0 and ledger["boundary_out"] > 0.0 and ledger["removed"] > 0.0,
			"inflow, outflow and removal were all counted")
	var state_image: Image = water.get_height_image()
	var lowest := INF
	for y in 64:
		for x in 80:
			lowest = minf(lowest, state_image.get_pixel(x, y).g)
	_check(lowest >= 0.0 and is_finite(lowest),
			"no cell holds negative or NaN water (lowest %.6f m)" % lowest)
	water.queue_free()
	await process_frame


func _differing(a: PackedInt32Array, b: PackedInt32Array) -> int:
	var count := absi(a.size() - b.size())
	for i in mini(a.size(), b.size()):
		if a[i] != b[i]:
			count += 1
	return count


func _test_a_stroke_and_its_undo_are_exact_on_the_rendering_device() -> void:
	print("-- an editor stroke and its undo on the RenderingDevice backend (queued edits)")
	var water: PipeWater = await _make_water(PipeWater.BACKEND_RENDERING_DEVICE, Vector2i(64, 48),
			1.0)
	water.terrain_heights = _dam_terrain(Vector2i(64, 48))
	var whole := Rect2i(0, 0, 64, 48)
	var before: PackedInt32Array = water.get_water_region(whole)
	water.paint_water(Vector3(-10, 0, 2), 0.3, 5.0)
	water.paint_water(Vector3(-6, 0, 2), 0.3, 5.0)
	water.paint_water(Vector3(12, 0, -5), -0.4, 6.0)
	var changes: Dictionary = water.get_water_changes(before)
	var region: Rect2i = changes.get("region", Rect2i())
	print("the stroke changed %s (%d cells differ)" % [region, _differing(before,
			water.get_water_region(whole))])
	_check(region.has_area(), "the brushes changed the water")
	water.set_water_region(region, changes["before"])
	var undone: PackedInt32Array = water.get_water_region(whole)
	var ledger: Dictionary = water.get_water_ledger()
	_check(undone == before, "the undo restores the depth field bit for bit (%d cells differ)"
			% _differing(before, undone))
	_near(ledger["total"], ledger["expected"], 0.0, "the ledger balances after the undo")
	# The redo while the simulation runs: queued, and exact when the next read applies it.
	water.paused = false
	water.set_water_region(region, changes["after"])
	var redone: PackedInt32Array = water.get_water_region(region)
	_check(redone == changes["after"], "the redo, queued while running, is exact (%d differ)"
			% _differing(changes["after"], redone))
	water.paused = true
	var terrain: PackedFloat32Array = water.get_terrain_region(whole)
	water.modify_terrain(Vector3(0, 0, 0), 0.8, 6.0)
	water.smooth_terrain(Vector3(3, 0, 1), 0.7, 6.0)
	var shaped: Dictionary = water.get_terrain_changes(terrain)
	water.set_terrain_region(shaped["region"], shaped["before"])
	_check(water.get_terrain_region(whole) == terrain and (shaped["region"] as Rect2i).has_area(),
			"raised and smoothed ground undoes to the same heights (%s)" % shaped["region"])
	water.queue_free()
	await process_frame


func _test_switching_backends_keeps_the_water() -> void:
	print("-- switching backend at runtime: RenderingDevice → CPU → RenderingDevice")
	var water: PipeWater = await _make_water(PipeWater.BACKEND_RENDERING_DEVICE, Vector2i(48, 48), 1.0)
	water.paused = false
	water.add_water(Vector3(5, 0, 5), 50.0, 3.0)
	await _frames(5)
	var before: Dictionary = water.get_water_ledger()
	water.backend = PipeWater.BACKEND_CPU
	await process_frame
	var on_cpu: Dictionary = water.get_water_ledger()
	_check(water.active_backend == PipeWater.BACKEND_CPU,
			"the CPU backend runs (%d)" % water.active_backend)
	_near(on_cpu["total"], before["total"], VOLUME_TOLERANCE, "the water moved across")
	_near(on_cpu["added"], before["added"], VOLUME_TOLERANCE, "the ledger moved across")
	water.backend = PipeWater.BACKEND_RENDERING_DEVICE
	await _frames(5)
	var back: Dictionary = water.get_water_ledger()
	_check(water.active_backend == PipeWater.BACKEND_RENDERING_DEVICE,
			"and back on the RenderingDevice")
	_near(back["total"], back["expected"], VOLUME_TOLERANCE, "ledger identity after two switches")
	_check(water.height_texture is Texture2DRD, "the textures are RenderingDevice textures again")
	water.queue_free()
	await process_frame


func _test_a_probe_body_floats_and_the_surface_material_reads_the_gpu_textures() -> void:
	print("-- a 100 kg body on four 0.05 m³ probes in a 3 m pool, drawn by the node's own mesh")
	var water: PipeWater = await _make_water(PipeWater.BACKEND_RENDERING_DEVICE, Vector2i(24, 24), 3.0)
	water.show_mesh = true
	water.paused = false
	var surface_mesh: MeshInstance3D = water.get_child(0, true) as MeshInstance3D
	var material := surface_mesh.material_override as ShaderMaterial if surface_mesh else null
	var sampled: Variant = material.get_shader_parameter("height_texture") if material else null
	_check(sampled == water.height_texture and water.height_texture is Texture2DRD,
			"the surface material samples the Texture2DRD the simulation writes")
	var body := RigidBody3D.new()
	body.mass = 100.0
	var shape := CollisionShape3D.new()
	shape.shape = BoxShape3D.new()
	body.add_child(shape)
	for corner: Vector3 in [Vector3(0.5, 0, 0.5), Vector3(-0.5, 0, 0.5), Vector3(0.5, 0, -0.5),
			Vector3(-0.5, 0, -0.5)]:
		var probe: Node3D = (load("res://addons/pipe_water/buoyancy_probe.gd") as GDScript).new()
		probe.set("volume", 0.05)
		probe.set("radius", 0.25)
		probe.set("drag", 8.0)
		probe.position = corner
		body.add_child(probe)
	body.position = Vector3(0.3, 4.0, -0.2)
	root.add_child(body)
	await _frames(360)
	# Submersion = mass / (density × volume) = 100 / (1000 × 0.2) = 0.5: probe centres at the
	# surface, as on the other backends (godot_project/tests/run_tests.gd).
	var surface: float = water.get_height(body.global_position)
	_near(body.global_position.y, surface, 0.05, "the body floats with its probes half in")
	_check(absf(body.linear_velocity.y) < 0.05,
			"the body has settled (|vy| = %.4f m/s)" % absf(body.linear_velocity.y))
	body.queue_free()
	water.queue_free()
	await process_frame


func _test_a_hull_floats_and_pushes_water_on_the_rendering_device() -> void:
	print("-- a 2 x 1 x 2 m crate of 2000 kg on a PipeWaterBody in a 3 m pool, on the RD backend")
	var water: PipeWater = await _make_water(PipeWater.BACKEND_RENDERING_DEVICE, Vector2i(32, 32), 3.0)
	water.paused = false
	var before: float = water.get_total_water()
	var crate: RigidBody3D = _make_crate(Vector3(0.0, 3.6, 0.0), Vector3(2.0, 1.0, 2.0), 2000.0,
			water)
	root.add_child(crate)
	var hull: Node3D = crate.get_child(1)
	await _frames(600)
	var displaced: float = hull.get(&"displaced_volume")
	print(("displaced %.4f m³ (expected 2), crate at %.4f m moving %.4f m/s, level %.4f m, "
			+ "total %.4f m³ (was %.4f)") % [displaced, crate.global_position.y,
			crate.linear_velocity.y, hull.get(&"water_level"), water.get_total_water(), before])
	# 5 %, not the 2 % of the other backends: reads from the RenderingDevice arrive up to two
	# frames late, the hull couples with a level a little behind the water's, and after 10 s
	# the crate still bobs by a few centimetres (2.06 m³ at 8 s, 2.0155 m³ at 10 s here).
	_near(displaced, 2.0, 0.1, "the hull displaces its mass in water on the RD backend (5 %)")
	_near(water.get_total_water(), before, 0.01, "displacing moves water, never makes any")
	_check(water.push_water(Vector3(8, 0, 8), Vector3(3, 0, 0), 2.0), "push_water accepts a push")
	await _frames(3)
	var pushed: Vector3 = water.get_flow_velocity(Vector3(8, 0, 8))
	print("pushed towards +X at 3 m/s: flow %s" % pushed)
	_check(pushed.x > 0.3, "push_water moves the water along +X on the RD backend")
	crate.queue_free()
	water.queue_free()
	await process_frame


func _test_rebuilds_and_frees_leave_nothing_behind() -> void:
	print("-- resizing, rebuilding and freeing (leaked RIDs are reported by Godot at exit)")
	var water: PipeWater = await _make_water(PipeWater.BACKEND_RENDERING_DEVICE, Vector2i(32, 32), 1.0)
	for size: Vector2i in [Vector2i(40, 24), Vector2i(17, 63), Vector2i(32, 32)]:
		water.grid_size = size
		water.rebuild()
		await process_frame
		var texture: Texture2D = water.height_texture
		_check(texture.get_width() == size.x and texture.get_height() == size.y,
				"after resizing to %s the texture is %d×%d" % [size, texture.get_width(), texture.get_height()])
	water.queue_free()
	await _frames(2)
	_check(true, "freed")


## A 64×48 basin on the RenderingDevice backend with a bump, a spring near its west end and an
## open east edge, run for FRAMES_BEFORE_SAVE frames of Godot's physics.
func _make_flowing_rd_water() -> PipeWater:
	var size := Vector2i(64, 48)
	var water: PipeWater = await _make_water(PipeWater.BACKEND_RENDERING_DEVICE, size, 0.4)
	var heights := PackedFloat32Array()
	for y in size.y:
		for x in size.x:
			heights.append(0.3 * sin(0.2 * x) * cos(0.25 * y) + 0.01 * (size.x - x))
	water.terrain_heights = heights
	water.boundary_east = PipeWater.BOUNDARY_OPEN
	water.rebuild()
	water.add_source(Vector3(-22, 0, -2), 6.0, 3.0)
	water.paused = false
	await _frames(FRAMES_BEFORE_SAVE)
	water.paused = true
	for point: Vector3 in SAVE_PROBE_POINTS:
		water.get_height(point)
	return water


## Runs FRAMES_AFTER_SAVE frames of 1/60 s with step() and records, per frame, the heights at
## SAVE_PROBE_POINTS and get_total_water(); then the exact ledger and the depth of every cell.
func _run_and_record(water: PipeWater) -> Dictionary:
	var heights: Array[PackedFloat64Array] = []
	var totals := PackedFloat64Array()
	for i in FRAMES_AFTER_SAVE:
		water.step(1.0 / 60.0)
		await process_frame
		var row := PackedFloat64Array()
		for point: Vector3 in SAVE_PROBE_POINTS:
			row.append(water.get_height(point))
		heights.append(row)
		totals.append(water.get_total_water())
	return {"heights": heights, "totals": totals, "ledger": water.get_water_ledger(),
			"image": water.get_height_image()}


## Largest difference of the depth channel of two height images of the same size; INF when one
## is missing or NaN appears.
func _largest_depth_difference(a: Image, b: Image) -> float:
	if a == null or b == null or a.get_size() != b.get_size():
		return INF
	var worst := 0.0
	for y in a.get_height():
		for x in a.get_width():
			var d: float = absf(a.get_pixel(x, y).g - b.get_pixel(x, y).g)
			if is_nan(d):
				return INF
			worst = maxf(worst, d)
	return worst


func _ledgers_equal(a: Dictionary, b: Dictionary, statement: String) -> void:
	var keys := ["initial", "added", "removed", "boundary_in", "boundary_out", "expected", "total"]
	var same := not a.is_empty() and not b.is_empty()
	var shown: Array[String] = []
	for key: String in keys:
		same = same and a.get(key) == b.get(key)
		shown.append("%s %.6f/%.6f" % [key, a.get(key, NAN), b.get(key, NAN)])
	_check(same, "%s, entry for entry: %s" % [statement, ", ".join(shown)])


func _test_load_state_replays_the_same_frames_on_the_rendering_device() -> void:
	print("-- save_state on the RenderingDevice, %d frames, load_state, the same %d frames again" % [
			FRAMES_AFTER_SAVE, FRAMES_AFTER_SAVE])
	var water: PipeWater = await _make_flowing_rd_water()
	_check(water.active_backend == PipeWater.BACKEND_RENDERING_DEVICE,
			"the node runs on the RenderingDevice (%d)" % water.active_backend)
	var saved_ledger: Dictionary = water.get_water_ledger()
	var state: PipeWaterState = water.save_state()
	# Format 4 compresses the terrain and keeps the water of wet tiles only: a few bytes a cell,
	# more than the header alone.
	_check(state != null and state.data.size() > 64 * 48,
			"save_state returns %d bytes for 64×48 cells" % [state.data.size() if state else 0])
	if state == null:
		water.queue_free()
		await process_frame
		return
	print("   ledger at the save: %s" % saved_ledger)
	var first: Dictionary = await _run_and_record(water)
	_check(first["ledger"]["added"] > saved_ledger["added"] and first["ledger"]["boundary_out"] > 0.0,
			"the water moved on: the spring added %.3f m³ and %.3f m³ left by the open edge" % [
				first["ledger"]["added"] - saved_ledger["added"], first["ledger"]["boundary_out"]])
	water.clear_last_error()
	_check(water.load_state(state),
			"load_state accepts the state (error \"%s\")" % water.get_last_error())
	_ledgers_equal(water.get_water_ledger(), saved_ledger,
			"right after load_state the ledger is the saved one")
	var second: Dictionary = await _run_and_record(water)
	# The first frames' queries may still show reads issued before the save (first run) or the
	# state loaded (second run): both runs are compared once those have arrived.
	var worst := 0.0
	var compared := 0
	var totals_equal := true
	for i in range(QUERY_FRAMES, FRAMES_AFTER_SAVE):
		for k in SAVE_PROBE_POINTS.size():
			var a: float = first["heights"][i][k]
			var b: float = second["heights"][i][k]
			worst = maxf(worst, absf(a - b) if is_finite(a) and is_finite(b) else INF)
			compared += 1
		totals_equal = totals_equal and first["totals"][i] == second["totals"][i]
	_check(compared > 0 and worst <= MAX_DEPTH_DIFFERENCE,
			"get_height at %d points over frames %d..%d: largest difference %.7f m ≤ %.4f m" % [
				SAVE_PROBE_POINTS.size(), QUERY_FRAMES, FRAMES_AFTER_SAVE - 1, worst, MAX_DEPTH_DIFFERENCE])
	_check(totals_equal,
			"get_total_water agrees exactly over those frames (last %.6f m³ and %.6f m³)" % [
			first["totals"][-1], second["totals"][-1]])
	_ledgers_equal(second["ledger"], first["ledger"], "after the same frames the ledger is the same")
	_check(first["ledger"]["total"] == first["ledger"]["expected"],
			"and it balances: total %.6f m³ = expected %.6f m³" % [
				first["ledger"]["total"], first["ledger"]["expected"]])
	var cells: float = _largest_depth_difference(first["image"], second["image"])
	_check(cells <= MAX_DEPTH_DIFFERENCE,
			"every cell's depth agrees: largest difference %.7f m ≤ %.4f m" % [cells, MAX_DEPTH_DIFFERENCE])
	water.queue_free()
	await process_frame


func _test_async_save_and_load_on_the_rendering_device_match_the_synchronous_ones() -> void:
	print(
		"-- save_state_async and load_state_async on the RenderingDevice,"
		+ " against save_state and load_state"
	)
	var water: PipeWater = await _make_flowing_rd_water()
	var saved_ledger: Dictionary = water.get_water_ledger()
	var state: PipeWaterState = water.save_state()
	var saves: Array = []
	var loads: Array = []
	water.state_saved.connect(
		func(p: String, error: int, s: PipeWaterState) -> void: saves.append([p, error, s])
	)
	water.state_loaded.connect(func(p: String, error: int) -> void: loads.append([p, error]))
	_check(water.save_state_async("") == OK, "save_state_async(\"\") starts")
	var frames := 0
	while saves.is_empty() and frames < 600:
		await physics_frame
		frames += 1
	_check(saves.size() == 1 and saves[0][1] == OK and saves[0][2] != null
			and (saves[0][2] as PipeWaterState).data == state.data,
			"state_saved after %d frames brings save_state's bytes" % frames)
	var first: Dictionary = await _run_and_record(water)
	_check(water.load_state_async(state) == OK, "load_state_async starts")
	frames = 0
	while loads.is_empty() and frames < 600:
		await physics_frame
		frames += 1
	_check(loads.size() == 1 and loads[0][1] == OK, "state_loaded(\"\", OK) after %d frames" % frames)
	_ledgers_equal(
		water.get_water_ledger(), saved_ledger, "right after the load the ledger is the saved one"
	)
	var second: Dictionary = await _run_and_record(water)
	var worst := 0.0
	for i in range(QUERY_FRAMES, FRAMES_AFTER_SAVE):
		for k in SAVE_PROBE_POINTS.size():
			var a: float = first["heights"][i][k]
			var b: float = second["heights"][i][k]
			worst = maxf(worst, absf(a - b) if is_finite(a) and is_finite(b) else INF)
	_check(
		worst <= MAX_DEPTH_DIFFERENCE,
		(
			"the frames after it match those after the save:"
			+ " largest get_height difference %.7f m ≤ %.4f m"
		) % [worst, MAX_DEPTH_DIFFERENCE]
	)
	_ledgers_equal(second["ledger"], first["ledger"], "after the same frames the ledger is the same")
	var cells: float = _largest_depth_difference(first["image"], second["image"])
	_check(cells <= MAX_DEPTH_DIFFERENCE,
			"every cell's depth agrees: largest difference %.7f m ≤ %.4f m" % [cells, MAX_DEPTH_DIFFERENCE])
	water.queue_free()
	await process_frame


func _test_a_state_saved_on_the_rendering_device_loads_on_the_cpu() -> void:
	print("-- a state saved on the RenderingDevice, through ResourceSaver, loaded on the CPU backend")
	var water: PipeWater = await _make_flowing_rd_water()
	var state: PipeWaterState = water.save_state()
	var saved_ledger: Dictionary = water.get_water_ledger()
	var saved_image: Image = water.get_height_image()
	var ahead: Dictionary = await _run_and_record(water)
	water.queue_free()
	for path: String in ["user://pipewater_rd_state.res", "user://pipewater_rd_state.tres"]:
		var written := ResourceSaver.save(state, path)
		_check(written == OK, "ResourceSaver.save writes %s (error %d)" % [path, written])
		var back := ResourceLoader.load(path, "", ResourceLoader.CACHE_MODE_IGNORE) as PipeWaterState
		DirAccess.remove_absolute(ProjectSettings.globalize_path(path))
		_check(back != null and back.data == state.data,
				"ResourceLoader.load gives back the %d saved bytes" % [back.data.size() if back else 0])
		if back == null:
			continue
		var cpu: PipeWater = await _make_water(PipeWater.BACKEND_CPU, Vector2i(64, 48), 0.0)
		cpu.boundary_east = PipeWater.BOUNDARY_OPEN
		_check(cpu.load_state(back), "a CPU-backend node loads it (error \"%s\")" % cpu.get_last_error())
		_check(cpu.active_backend == PipeWater.BACKEND_CPU,
				"and still runs on the CPU (%d)" % cpu.active_backend)
		_ledgers_equal(cpu.get_water_ledger(), saved_ledger,
				"its ledger is the one saved on the RenderingDevice")
		var loaded_cells: float = _largest_depth_difference(cpu.get_height_image(), saved_image)
		_check(loaded_cells == 0.0,
				"every cell's depth is the saved one (largest difference %.7f m)" % loaded_cells)
		var on_cpu: Dictionary = await _run_and_record(cpu)
		var cells: float = _largest_depth_difference(on_cpu["image"], ahead["image"])
		_check(cells <= MAX_DEPTH_DIFFERENCE,
				("after %d more frames the CPU agrees with the RenderingDevice: largest depth "
				+ "difference %.7f m ≤ %.4f m") % [
					FRAMES_AFTER_SAVE, cells, MAX_DEPTH_DIFFERENCE])
		_near(on_cpu["ledger"]["total"], ahead["ledger"]["total"], VOLUME_TOLERANCE,
				"and so does the total water")
		_near(on_cpu["ledger"]["total"], on_cpu["ledger"]["expected"], 0.0, "the CPU's ledger balances")
		cpu.queue_free()
		await process_frame


func _test_a_wrong_size_state_is_refused_and_the_water_is_kept() -> void:
	print("-- states for another grid or cell size on the RenderingDevice "
			+ "(each prints a PipeWater error)")
	var water: PipeWater = await _make_flowing_rd_water()
	var state: PipeWaterState = water.save_state()
	water.queue_free()
	await process_frame
	for shape: Array in [[Vector2i(48, 64), 1.0], [Vector2i(64, 48), 0.5]]:
		var other: PipeWater = await _make_water(PipeWater.BACKEND_RENDERING_DEVICE, shape[0], 1.0)
		other.cell_size = shape[1]
		other.rebuild()
		other.add_water(Vector3(2, 0, 3), 30.0, 4.0)
		other.step(1.0 / 60.0)
		await process_frame
		var before: Dictionary = other.get_water_ledger()
		var image_before: Image = other.get_height_image()
		other.clear_last_error()
		var accepted: bool = other.load_state(state)
		var message: String = other.get_last_error()
		_check(not accepted and message.contains("grid"),
				"a state for 64×48 cells of 1 m is refused by %s cells of %s m: \"%s\"" % [
					shape[0], shape[1], message])
		_ledgers_equal(other.get_water_ledger(), before, "and the water is kept")
		var cells: float = _largest_depth_difference(other.get_height_image(), image_before)
		_check(cells == 0.0, "every cell's depth is unchanged (largest difference %.7f m)" % cells)
		other.queue_free()
		await process_frame


func _test_a_state_loaded_while_reads_are_in_flight_never_answers_with_old_water() -> void:
	print("-- load_state while tile reads of other water are in flight")
	var water: PipeWater = await _make_water(
			PipeWater.BACKEND_RENDERING_DEVICE, Vector2i(32, 32), -1.0)
	var dry: PipeWaterState = water.save_state()
	var point := Vector3(2.5, 0, -3.5)
	var queries := 0
	var wrong := 0
	for round in 8:
		water.fill_basin(Vector3(0.5, 2.0, 0.5))
		for i in 3:
			water.get_depth(point)
			water.step(1.0 / 60.0)
			await process_frame
		# Reads of the 2 m deep water are in flight now (on Godot 4.4+; 4.3 reads at once).
		_check(water.load_state(dry), "round %d: the dry state loads" % round)
		for i in 4:
			var depth: float = water.get_depth(point)
			var total: float = water.get_total_water()
			queries += 1
			if depth != 0.0 or total != 0.0:
				wrong += 1
				print("   round %d, frame %d after the load: depth %.3f m, total %.3f m³" % [
						round, i, depth, total])
			water.step(1.0 / 60.0)
			await process_frame
	_check(wrong == 0, "%d queries after loads: %d answered with water from before the load" % [
			queries, wrong])
	water.queue_free()
	await process_frame


func _test_a_lost_rendering_device_moves_the_water_to_wgpu() -> void:
	print("-- simulate_device_loss() on the RenderingDevice backend (prints a PipeWater warning)")
	var water: PipeWater = await _make_water(PipeWater.BACKEND_RENDERING_DEVICE, Vector2i(48, 32), 1.0)
	var point := Vector3(-6.5, 0, 2.5)
	water.add_water(point, 200.0, 8.0)
	# Past the first recovery point (60 frames on this grid, and the reads' latency): the water
	# goes on from the newest one, so a loss loses at most the frames since.
	for i in 75:
		water.get_depth(point)
		water.step(1.0 / 60.0)
		await process_frame
	var depth_before: float = water.get_depth(point)
	var rebuilt: Array[int] = []
	water.simulation_rebuilt.connect(func(active: int) -> void: rebuilt.append(active))
	_check(water.simulate_device_loss(), "simulate_device_loss() counts Godot's device as lost")
	water.step(1.0 / 60.0)
	var active: int = water.active_backend
	_check(active == PipeWater.BACKEND_GPU or active == PipeWater.BACKEND_CPU,
			"the water goes on on wgpu, or the CPU without an adapter (active_backend %d: %s)" % [
				active, water.get_backend_description()])
	_check(rebuilt.size() == 1 and rebuilt[0] == active,
			"simulation_rebuilt is emitted once: %s" % [rebuilt])
	_check(water.height_texture is ImageTexture, "the textures are filled on the CPU now (%s)" % [
			water.height_texture.get_class()])
	# The mound stands as it stood at the recovery point, a few frames before the loss; had the
	# water been lost, the point would stand at the loaded 1 m.
	var depth_after: float = water.get_depth(point)
	_check(depth_after > 1.0 + 0.5 * (depth_before - 1.0),
			"the queried water goes on where it was: %.3f m before the loss, %.3f m after (1 m loaded)" % [
				depth_before, depth_after])
	var ledger: Dictionary = water.get_water_ledger()
	_near(ledger["total"], ledger["expected"], VOLUME_TOLERANCE,
			"the mass identity holds across the loss")


## The RenderingDevice backend reads back only the tiles queries touch; a lost device must still
## give back the whole water of its last recovery point (a copy of every field, taken once every
## 60 frames on a small grid), not the cells no query read as they were loaded.
func _test_a_lost_rendering_device_gives_back_water_and_terrain_no_query_read() -> void:
	print("-- a lost RenderingDevice gives back water added and terrain dug where no query looked")
	var water: PipeWater = await _make_water(PipeWater.BACKEND_RENDERING_DEVICE, Vector2i(48, 32), 1.0)
	var dug := Vector3(15.5, 0, -9.5)
	var poured := Vector3(-14.5, 0, 8.5)
	var total_before: float = water.get_total_water()
	water.modify_terrain(dug, -0.5, 3.0)
	water.add_water(poured, 100.0, 4.0)
	# Past one recovery interval (60 frames on this grid) and the reads' latency.
	for i in 75:
		water.step(1.0 / 60.0)
		await process_frame
	water.simulate_device_loss()
	water.step(1.0 / 60.0)
	var ground: float = water.get_terrain_height(dug)
	var total_after: float = water.get_total_water()
	_check(ground < -0.3,
			"the dug ground comes back dug: %.3f m (0 m as loaded, -0.5 m at the dig's centre)" % ground)
	_near(total_after, total_before + 100.0, 0.5,
			"the poured water comes back: %.3f m³ after the loss, %.3f m³ loaded + 100 m³" % [
				total_after, total_before])
	var ledger: Dictionary = water.get_water_ledger()
	_near(ledger["total"], ledger["expected"], VOLUME_TOLERANCE,
			"the mass identity holds across the loss")
	water.queue_free()
	await process_frame


func _test_detail_waves_run_on_the_gpu_into_a_texture2drd() -> void:
	print("-- detail waves on the RenderingDevice")
	var water: PipeWater = await _make_water(PipeWater.BACKEND_RENDERING_DEVICE, Vector2i(32, 32), 1.0)
	water.paused = false
	await _frames(2)
	_check(water.detail_texture is Texture2DRD,
			"detail_texture is a Texture2DRD (%s)" % water.detail_texture.get_class())
	var ledger_before: Dictionary = water.get_water_ledger()
	var at := Vector3(2.0, 0.0, -1.0)
	_check(water.add_ripple(at, 0.2, 2.0), "add_ripple reaches the window")
	# A query marks the tiles around the point; they are read back from the next frames on.
	water.get_height(at, true)
	await _frames(6)
	var rd := RenderingServer.get_rendering_device()
	var rid: RID = (water.detail_texture as Texture2DRD).texture_rd_rid
	var side: int = water.detail_window
	var bytes: PackedByteArray = rd.texture_get_data(rid, 0)
	var image := Image.create_from_data(side, side, false, Image.FORMAT_RGBAH, bytes)
	var highest := 0.0
	var not_finite := 0
	for y in side:
		for x in side:
			var texel: Color = image.get_pixel(x, y)
			for k in 4:
				if not is_finite(texel[k]):
					not_finite += 1
			highest = maxf(highest, absf(texel.r))
	_check(not_finite == 0, "every texel of the detail texture is finite (%d are not)" % not_finite)
	_check(bytes.size() == side * side * 8 and highest > 0.01,
			"the GPU wrote the ring into the %d² RGBA16F texture: largest height %.4f m" % [side, highest])
	var plain: float = water.get_height(at)
	var waved: float = water.get_height(at, true)
	_check(absf(waved - plain) > 1.0e-4, "get_height(position, true) reads the waves back: %.5f m" % [
			waved - plain])
	var ledger_after: Dictionary = water.get_water_ledger()
	_check(ledger_after["total"] == ledger_before["total"]
			and ledger_after["expected"] == ledger_after["total"],
			"the waves moved no water: total %.6f m³ before and after" % ledger_after["total"])
	water.queue_free()
	await process_frame
