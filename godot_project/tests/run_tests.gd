extends "res://tests/test_base.gd"
## Headless tests of the PipeWater addon.
##
## Run from the repository root (cargo xtask test does this when GODOT is set):
## [codeblock]
## $GODOT --headless --path godot_project --import
## $GODOT --headless --path godot_project --fixed-fps 60 -s res://tests/run_tests.gd
## [/codeblock]
## Every check prints the property it states and the figures it compares. The run ends with
## PIPEWATER TESTS PASSED (exit code 0) or PIPEWATER TESTS FAILED (exit code 1). Checks that feed
## bad arguments expect Godot errors starting with "PipeWater:" in the output.

## Heights and depths read back within this (m): queries are bilinear over f32 cell values.
const HEIGHT_TOLERANCE := 1.0e-3
## Volumes agree within this (m³): edits round to whole depth quanta of 2⁻²⁰ m per cell.
const VOLUME_TOLERANCE := 1.0e-3
## A floating body settles within this of its predicted height (m) after six seconds.
const FLOAT_TOLERANCE := 0.05
## ...and moves vertically slower than this (m/s).
const SETTLED_SPEED := 0.05
const PROBE_SCRIPT_PATH := "res://addons/pipe_water/buoyancy_probe.gd"
const Bake := preload("res://addons/pipe_water/editor/bake.gd")
## The demo's baked water, for the size of a baked state on disk.
const DEMO_BAKED_WATER := "res://demo/main_PipeWater.res"
## A loaded state restores water and ledger bit for bit: they are whole depth quanta.
const EXACT := 0.0
## Speeds read back within this (m/s): an initial current is stored as f32 pipe fluxes.
const SPEED_TOLERANCE := 1.0e-3
## A basin fed by a level edge stands within this of the level (m) once the inrush has settled.
const LEVEL_TOLERANCE := 0.02
## The most water a cell holds, m (2³¹ − 1 quanta of 2⁻²⁰ m, named 2048 m in errors).
const MAX_DEPTH := 2048.0
## Bytes of a readback's header (ledger and totals: backend/readback.rs HEADER_WORDS, 14 since the
## ledger counts solidified quanta), of one 8×8-cell tile, and per cell of a full read (a height
## and a flow texel).
const READBACK_HEADER_BYTES := 56
const READBACK_TILE_BYTES := 2048
## Bytes of the sleeping tiles' report that every wgpu read carries behind the snapshot
## (backend/sleep.rs SLEEP_REPORT_BYTES).
const READBACK_SLEEP_REPORT_BYTES := 16
const READBACK_CELL_BYTES := 32



func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	print("PipeWater headless tests, Godot %s" % Engine.get_version_info().string)
	if not ClassDB.class_exists(&"PipeWater"):
		_check(false, "the PipeWater class is registered (is the library in addons/pipe_water/bin?)")
		_finish()
		return
	await _test_pool_height_honours_the_global_transform()
	await _test_rotated_node_maps_global_points_to_its_grid()
	await _test_add_and_remove_water_change_the_total_by_their_volume()
	await _test_sources_and_drains()
	await _test_fill_basin_fills_one_basin_to_a_level()
	await _test_textures_have_the_documented_size_and_format()
	await _test_terrain_from_image_and_digging()
	await _test_backend_choice_falls_back_without_crashing()
	await _test_bad_arguments_are_rejected_and_state_stays_safe()
	await _test_probe_body_floats_at_its_predicted_depth()
	await _test_probe_body_sinks_where_there_is_no_water()
	await _test_probe_body_drifts_with_the_current()
	await _test_signals_are_emitted()
	await _test_a_scene_with_baked_water_runs_from_it_exactly()
	_test_a_baked_state_compresses_on_disk()
	await _test_a_level_edge_fills_a_dry_basin_towards_its_level()
	await _test_an_initial_current_flows_at_once_and_after_reset()
	await _test_momentum_advection_carries_a_flood_farther()
	await _test_a_hull_floats_displaces_water_and_pushes_a_wake()
	await _test_a_hull_without_a_collision_shape_floats_without_spinning()
	await _test_bad_hulls_and_pushes_are_refused_safely()
	await _test_the_depth_limit_is_refused_naming_the_property_and_its_range()
	await _test_nearly_full_cells_take_exactly_what_fits()
	await _test_wgpu_reads_back_only_the_tiles_queries_touch_unless_the_textures_are_used()
	await _test_a_lost_wgpu_device_moves_the_water_to_the_cpu()
	await _test_detail_waves_ring_without_moving_water()
	await _test_bad_ripples_and_detail_settings_are_refused()
	_finish()


func _test_pool_height_honours_the_global_transform() -> void:
	print("-- a 2 m pool on flat ground, node at (10, 5, -3)")
	var water: PipeWater = await _make_cpu_water(Vector2i(32, 32), 2.0, Vector3(10, 5, -3))
	var inside := Vector3(12.3, 0.0, -1.7)
	_near(water.get_height(inside), 7.0, HEIGHT_TOLERANCE, "get_height is the global Y of the surface")
	_near(water.get_depth(inside), 2.0, HEIGHT_TOLERANCE, "get_depth is the pool depth")
	_near(water.get_terrain_height(inside), 5.0, HEIGHT_TOLERANCE, "terrain is the node's Y")
	_near(water.get_flow_velocity(inside).length(), 0.0, 1.0e-6, "still water has no flow velocity")
	_check(water.is_inside(inside), "is_inside is true over the grid")
	var outside := Vector3(100.0, 0.0, 0.0)
	var h: float = water.get_height(outside)
	_check(is_inf(h) and h < 0.0, "get_height outside the grid is -INF (got %f)" % h)
	_check(is_inf(water.get_terrain_height(outside)), "get_terrain_height outside is -INF")
	_near(water.get_depth(outside), 0.0, 0.0, "get_depth outside the grid is 0")
	_check(water.get_flow_velocity(outside) == Vector3.ZERO, "get_flow_velocity outside is ZERO")
	_check(not water.is_inside(outside), "is_inside is false off the grid")
	_near(water.get_total_water(), 32.0 * 32.0 * 2.0, VOLUME_TOLERANCE, "total water is area × depth")
	await _free(water)


func _test_rotated_node_maps_global_points_to_its_grid() -> void:
	print("-- terrain sloping along local +X, node rotated 90° about Y")
	var water: PipeWater = await _make_cpu_water(Vector2i(32, 32), -10.0, Vector3.ZERO)
	var heights := PackedFloat32Array()
	for y in 32:
		for x in 32:
			heights.append(0.1 * x)
	water.terrain_heights = heights
	water.rotation = Vector3(0.0, PI / 2.0, 0.0)
	water.rebuild()
	# Rotating +90° about Y maps local +X to global -Z: global (0, 0, -5) is local (5, 0, 0),
	# whose continuous cell x is 5 + 16 - 0.5 = 20.5, so the terrain there is 2.05 m.
	_near(water.get_terrain_height(Vector3(0, 0, -5)), 2.05, HEIGHT_TOLERANCE, "rotated lookup")
	_check(water.get_terrain_heights().size() == 32 * 32, "one height a cell")
	_near(water.get_terrain_heights()[31], 3.1, 1.0e-6, "terrain_heights[31] reads back as set")
	await _free(water)


func _test_add_and_remove_water_change_the_total_by_their_volume() -> void:
	print("-- add_water and remove_water in a 1 m pool (CPU backend)")
	var water: PipeWater = await _make_cpu_water(Vector2i(40, 40), 1.0, Vector3.ZERO)
	var before: float = water.get_total_water()
	var added: float = water.add_water(Vector3(3, 0, -2), 10.0, 3.0)
	var after_add: float = water.get_total_water()
	_near(added, 10.0, VOLUME_TOLERANCE, "add_water returns the requested 10 m³")
	_near(after_add - before, 10.0, VOLUME_TOLERANCE, "total grows by the requested 10 m³")
	var removed: float = water.remove_water(Vector3(-4, 0, 4), 6.0, 2.5)
	var after_remove: float = water.get_total_water()
	_near(removed, 6.0, VOLUME_TOLERANCE, "remove_water returns the 6 m³ taken")
	_near(after_add - after_remove, removed, VOLUME_TOLERANCE, "total shrinks by what was removed")
	var greedy: float = water.remove_water(Vector3(0, 0, 0), 1.0e6, 0.0)
	_near(greedy, 1.0, VOLUME_TOLERANCE, "remove_water never takes more than the cell holds (1 m³)")
	for i in 30:
		water.step(1.0 / 30.0)
	var ledger: Dictionary = water.get_water_ledger()
	_near(ledger["total"], ledger["expected"], VOLUME_TOLERANCE, "ledger: total = expected")
	_near(water.get_total_water(), after_remove - greedy, VOLUME_TOLERANCE, "walls keep the water")
	var off_grid: float = water.add_water(Vector3(500, 0, 500), 5.0, 1.0)
	_near(off_grid, 0.0, 0.0, "add_water off the grid adds nothing")
	await _free(water)


func _test_sources_and_drains() -> void:
	print("-- a 2 m³/s source for one second, then a drain")
	var water: PipeWater = await _make_cpu_water(Vector2i(24, 24), 1.0, Vector3.ZERO)
	water.paused = true
	var before: float = water.get_total_water()
	var id: int = water.add_source(Vector3(2, 0, 2), 2.0, 2.0)
	_check(id >= 1, "add_source returns an id ≥ 1 (got %d)" % id)
	water.step(1.0)
	_near(water.get_total_water() - before, 2.0, VOLUME_TOLERANCE, "source adds rate × time")
	_check(water.remove_source(id), "remove_source(id) is true once")
	_check(not water.remove_source(id), "remove_source(id) is false the second time")
	var drain: int = water.add_drain(Vector3(-2, 0, -2), 1.5, 2.0)
	var mid: float = water.get_total_water()
	water.step(1.0)
	_near(mid - water.get_total_water(), 1.5, VOLUME_TOLERANCE, "drain removes rate × time")
	_check(water.get_source_ids() == PackedInt64Array([drain]), "get_source_ids lists the drain")
	await _free(water)


func _test_textures_have_the_documented_size_and_format() -> void:
	print("-- height_texture and flux_texture")
	var water: PipeWater = await _make_cpu_water(Vector2i(48, 20), 1.5, Vector3.ZERO)
	for texture: ImageTexture in [water.height_texture, water.flux_texture]:
		_check(texture != null, "the texture exists")
		if texture == null:
			continue
		var size := Vector2i(texture.get_width(), texture.get_height())
		_check(size == Vector2i(48, 20), "texture size %s equals grid_size (48, 20)" % size)
		_check(texture.get_format() == Image.FORMAT_RGBAF, "format %d is FORMAT_RGBAF (%d)" % [
				texture.get_format(), Image.FORMAT_RGBAF])
	var same: Texture2D = water.height_texture
	water.grid_size = Vector2i(16, 12)
	water.rebuild()
	_check(water.height_texture == same, "the texture object survives a rebuild")
	_check(water.height_texture.get_width() == 16 and water.height_texture.get_height() == 12,
			"after a rebuild the texture follows grid_size (16, 12)")
	# The image the node uploads (the texture's own copy may live only on the GPU).
	var image: Image = water.get_height_image()
	_check(image != null and image.get_size() == Vector2i(16, 12), "get_height_image is 16×12")
	if image != null:
		_check(image.get_format() == Image.FORMAT_RGBAF, "the uploaded image is FORMAT_RGBAF")
		var texel: Color = image.get_pixel(3, 4)
		_near(texel.r, 1.5, HEIGHT_TOLERANCE, "height_texture R is the surface height")
		_near(texel.g, 1.5, HEIGHT_TOLERANCE, "height_texture G is the depth")
		_near(texel.b, 0.0, HEIGHT_TOLERANCE, "height_texture B is the terrain height")
		_near(texel.a, 1.0, 0.0, "height_texture A is 1 for a wet cell")
	var flux: Image = water.get_flux_image()
	_check(flux != null and flux.get_pixel(3, 4).b == 0.0, "flux B (speed) is 0 in still water")
	water.update_textures = false
	water.add_water(Vector3(0.5, 0, 0.5), 50.0, 3.0)
	water.step(0.1)
	await process_frame
	var frozen: float = water.get_height_image().get_pixel(8, 6).g
	var queried: float = water.get_depth(Vector3(0.5, 0, 0.5))
	_near(frozen, 1.5, HEIGHT_TOLERANCE, "update_textures off: the texture keeps the old depth")
	_check(queried > 1.6, "update_textures off: queries still see the added water (%.3f m)" % queried)
	water.update_textures = true
	await physics_frame
	await process_frame
	var thawed: float = water.get_height_image().get_pixel(8, 6).g
	_check(thawed > 1.6, "update_textures on again: the texture shows it (%.3f m)" % thawed)
	water.paused = true
	await physics_frame
	await process_frame
	var full: float = water.get_height_image().get_pixel(8, 6).g
	water.half_float_textures = true
	await physics_frame
	await process_frame
	var half: Image = water.get_height_image()
	var half_format: int = water.height_texture.get_format()
	_check(half.get_format() == Image.FORMAT_RGBAH and half_format == Image.FORMAT_RGBAH,
			"half_float_textures: the textures hold FORMAT_RGBAH")
	# A half float keeps 11 significant bits: rounding moves a value by at most 2⁻¹¹ of it.
	_near(half.get_pixel(8, 6).g, full, absf(full) / 2048.0,
			"half_float_textures: the same depth within half-float rounding")
	await _free(water)


func _test_fill_basin_fills_one_basin_to_a_level() -> void:
	print("-- fill_basin: two 16 × 16 m pits split by a 3 m wall, node at Y = 5")
	var water: PipeWater = await _make_cpu_water(Vector2i(36, 16), -10.0, Vector3(0, 5, 0))
	var heights := PackedFloat32Array()
	for y in 16:
		for x in 36:
			heights.append(3.0 if x >= 16 and x < 20 else 0.0)
	water.terrain_heights = heights
	water.rebuild()
	# Local x of cell column c is c + 0.5 - 18; the west pit is columns 0..15.
	var added: float = water.fill_basin(Vector3(-10.0, 7.0, 0.5))
	_near(added, 16.0 * 16.0 * 2.0, VOLUME_TOLERANCE, "fill_basin to global Y 7 adds 16 × 16 × 2 m³")
	await process_frame
	_near(water.get_height(Vector3(-10.0, 0, 0.5)), 7.0, HEIGHT_TOLERANCE,
			"the west pit stands at Y 7")
	_near(water.get_depth(Vector3(10.0, 0, 0.5)), 0.0, 0.0, "the wall keeps the east pit dry")
	_near(water.fill_basin(Vector3(0.0, 7.0, 0.5)), 0.0, 0.0,
			"a fill started on the wall adds nothing")
	_near(water.fill_basin(Vector3(500.0, 7.0, 0.5)), 0.0, 0.0, "a fill off the grid adds nothing")
	var ledger: Dictionary = water.get_water_ledger()
	_near(ledger["total"], ledger["expected"], VOLUME_TOLERANCE, "ledger: total = expected")
	await _free(water)


func _test_terrain_from_image_and_digging() -> void:
	print("-- terrain from an L8 image, then digging")
	var water: PipeWater = await _make_cpu_water(Vector2i(8, 8), -100.0, Vector3.ZERO)
	var bytes := PackedByteArray()
	for y in 8:
		for x in 8:
			bytes.append(x * 32)
	var image := Image.create_from_data(8, 8, false, Image.FORMAT_L8, bytes)
	_check(water.set_terrain_from_image(image, 10.0, 1.0), "set_terrain_from_image accepts L8")
	water.rebuild()
	# Cell (x, y) has value x·32/255; its centre is at local x = x + 0.5 - 4.
	var expected: float = 1.0 + 10.0 * (5 * 32) / 255.0
	_near(water.get_terrain_height(Vector3(1.5, 0, 0.5)), expected, HEIGHT_TOLERANCE, "cell 5 height")
	var before: float = water.get_terrain_height(Vector3(0.5, 0, 0.5))
	_check(water.modify_terrain(Vector3(0.5, 0, 0.5), -2.0, 3.0), "modify_terrain accepts a dig")
	var after: float = water.get_terrain_height(Vector3(0.5, 0, 0.5))
	_near(before - after, 2.0, 0.3, "digging lowers the ground at the centre by about 2 m")
	await _free(water)


func _test_backend_choice_falls_back_without_crashing() -> void:
	print("-- backend = BACKEND_GPU, then BACKEND_AUTO")
	var water: PipeWater = await _make_cpu_water(Vector2i(16, 16), 1.0, Vector3.ZERO)
	for choice: int in [PipeWater.BACKEND_GPU, PipeWater.BACKEND_AUTO]:
		water.backend = choice
		_check(water.rebuild(), "the simulation builds with backend %d" % choice)
		var active: int = water.active_backend
		_check(active == PipeWater.BACKEND_GPU or active == PipeWater.BACKEND_CPU,
				"active_backend is GPU or CPU (got %d: %s)" % [active, water.get_backend_description()])
		water.step(0.1)
	await _free(water)


func _test_bad_arguments_are_rejected_and_state_stays_safe() -> void:
	print("-- bad arguments (each should print a PipeWater error)")
	var water: PipeWater = await _make_cpu_water(Vector2i(20, 20), 2.0, Vector3.ZERO)
	var total: float = water.get_total_water()
	var bad_properties: Array = [
		["cell_size", -1.0], ["cell_size", 0.0], ["cell_size", NAN], ["cell_size", INF],
		["grid_size", Vector2i(0, 5)], ["grid_size", Vector2i(100000, 8)],
		["gravity", NAN], ["damping", 2.0], ["time_scale", -1.0], ["max_substeps", 0],
		["max_step", 0.0], ["courant", 5.0], ["pipe_depth", -1.0], ["inflow_rate_north", -1.0],
		["initial_water_level", INF], ["height_scale", NAN],
		["terrain_heights", PackedFloat32Array([1.0, 2.0])],
		["heightmap", ImageTexture.new()],
	]
	for case: Array in bad_properties:
		var property: String = case[0]
		var before: Variant = water.get(property)
		water.clear_last_error()
		water.set(property, case[1])
		var message: String = water.get_last_error()
		_check(water.get(property) == before and message.contains(property),
				"%s = %s is rejected, value kept, error names it: \"%s\"" % [property, case[1], message])
	var nan_point := Vector3(NAN, 0, 0)
	_near(water.add_water(nan_point, 1.0, 1.0), 0.0, 0.0, "add_water at a NaN position adds 0")
	_near(water.add_water(Vector3.ZERO, -1.0, 1.0), 0.0, 0.0, "add_water of a negative volume adds 0")
	_near(water.add_water(Vector3.ZERO, NAN, 1.0), 0.0, 0.0, "add_water of a NaN volume adds 0")
	_near(water.add_water(Vector3.ZERO, 1.0, 1.0e9), 0.0, 0.0, "add_water with a huge radius adds 0")
	_near(water.remove_water(Vector3.ZERO, INF, 1.0), 0.0, 0.0, "remove_water of INF removes 0")
	_check(water.add_source(Vector3.ZERO, INF, 1.0) == -1, "add_source with rate INF returns -1")
	_check(water.add_source(Vector3(900, 0, 0), 1.0, 1.0) == -1, "add_source off the grid is -1")
	_check(not water.modify_terrain(Vector3.ZERO, NAN, 1.0), "modify_terrain by NaN is refused")
	_near(water.fill_basin(nan_point), 0.0, 0.0, "fill_basin at a NaN position adds 0")
	_near(water.fill_basin(Vector3(0, 3.0e6, 0)), 0.0, 0.0, "fill_basin to a level of 3e6 m adds 0")
	_check(water.step(-1.0) == 0 and water.step(NAN) == 0, "step(-1) and step(NaN) do nothing")
	_check(not water.set_terrain_from_image(Image.new(), 1.0, 0.0), "an empty image is refused")
	var h: float = water.get_height(nan_point)
	_check(is_inf(h), "get_height at a NaN position is -INF (got %f)" % h)
	water.step(0.5)
	var after: float = water.get_total_water()
	_near(after, total, VOLUME_TOLERANCE, "after all that the water is unchanged and not NaN")
	_near(water.get_height(Vector3(1, 0, 1)), 2.0, HEIGHT_TOLERANCE, "and the pool is still 2 m")
	await _free(water)


## A 100 kg box carried by four probes of 0.05 m³ and radius 0.25 m, drag 8/s (damping ratio
## about 0.3, so six seconds settle it to well under a millimetre).
func _make_boat(at: Vector3) -> RigidBody3D:
	var probe_script: GDScript = load(PROBE_SCRIPT_PATH)
	var body := RigidBody3D.new()
	body.mass = 100.0
	var shape := CollisionShape3D.new()
	var box := BoxShape3D.new()
	box.size = Vector3(1.2, 0.5, 1.2)
	shape.shape = box
	body.add_child(shape)
	for corner: Vector3 in [Vector3(0.5, 0, 0.5), Vector3(-0.5, 0, 0.5), Vector3(0.5, 0, -0.5),
			Vector3(-0.5, 0, -0.5)]:
		var probe: Node3D = probe_script.new()
		probe.set("volume", 0.05)
		probe.set("radius", 0.25)
		probe.set("drag", 8.0)
		probe.position = corner
		body.add_child(probe)
	body.position = at
	return body


func _test_probe_body_floats_at_its_predicted_depth() -> void:
	print("-- a 100 kg body on four 0.05 m³ probes in a still 3 m pool")
	var water: PipeWater = await _make_cpu_water(Vector2i(24, 24), 3.0, Vector3.ZERO)
	var boat: RigidBody3D = _make_boat(Vector3(0.3, 4.0, -0.2))
	root.add_child(boat)
	for i in 360:
		await physics_frame
	# Submersion = mass / (density × total volume) = 100 / (1000 × 0.2) = 0.5: the probes'
	# centres (at the body's origin height) sit at the surface.
	var surface: float = water.get_height(boat.global_position)
	print("surface %.4f m, body at %.4f m, vertical speed %.4f m/s" % [
			surface, boat.global_position.y, boat.linear_velocity.y])
	_near(boat.global_position.y, surface, FLOAT_TOLERANCE, "the body floats with probes half in")
	_check(absf(boat.linear_velocity.y) < SETTLED_SPEED,
			"the body has settled (|vy| = %.4f < %.2f m/s)" % [absf(boat.linear_velocity.y),
			SETTLED_SPEED])
	_check(not is_nan(water.get_total_water()), "the water stays finite")
	await _free(boat)
	await _free(water)


func _test_probe_body_sinks_where_there_is_no_water() -> void:
	print("-- the same body over a dry grid falls freely")
	var water: PipeWater = await _make_cpu_water(Vector2i(24, 24), -1.0, Vector3.ZERO)
	var boat: RigidBody3D = _make_boat(Vector3(0.0, 2.0, 0.0))
	root.add_child(boat)
	for i in 60:
		await physics_frame
	# Free fall for one second drops 4.9 m; buoyancy would have held it near the ground at 0.
	print("after 1 s the body is at %.3f m" % boat.global_position.y)
	var y: float = boat.global_position.y
	_check(y < -2.0, "the body fell below -2 m (at %.3f)" % y)
	await _free(boat)
	await _free(water)


func _test_probe_body_drifts_with_the_current() -> void:
	print("-- a channel fed at -X (inflow 5 m³/s) and open at +X carries the body along +X")
	var water: PipeWater = ClassDB.instantiate(&"PipeWater")
	water.backend = PipeWater.BACKEND_CPU
	water.grid_size = Vector2i(48, 6)
	water.initial_water_level = 1.0
	water.show_mesh = false
	water.boundary_west = PipeWater.BOUNDARY_INFLOW
	water.inflow_rate_west = 5.0
	water.boundary_east = PipeWater.BOUNDARY_OPEN
	root.add_child(water)
	# Small waves travel at √(g·1 m) ≈ 3.1 m/s: after 2.5 s the inflow front has passed x = -18,
	# 6 m from the fed edge, and the current behind it runs at about q / d ≈ 0.8 m/s.
	for i in 150:
		await physics_frame
	var boat: RigidBody3D = _make_boat(Vector3(-18.0, 1.0, 0.0))
	root.add_child(boat)
	for i in 180:
		await physics_frame
	var flow: Vector3 = water.get_flow_velocity(boat.global_position)
	var moved: float = boat.global_position.x + 18.0
	print("flow at the body %s m/s; body moved %.3f m along X, vx %.3f m/s" % [
			flow, moved, boat.linear_velocity.x])
	_check(flow.x > 0.05, "the water flows along +X (%.3f m/s)" % flow.x)
	_check(moved > 0.2 and boat.linear_velocity.x > 0.0,
			"the body drifts along +X with it (moved %.3f m)" % moved)
	await _free(boat)
	await _free(water)


func _test_signals_are_emitted() -> void:
	print("-- simulation_rebuilt and simulation_reset")
	var water: PipeWater = await _make_cpu_water(Vector2i(8, 8), 1.0, Vector3.ZERO)
	var seen: Array = []
	water.simulation_rebuilt.connect(func(active: int) -> void: seen.append("rebuilt %d" % active))
	water.simulation_reset.connect(func() -> void: seen.append("reset"))
	water.rebuild()
	water.reset()
	print("signals seen: %s" % [seen])
	_check(seen == ["rebuilt %d" % PipeWater.BACKEND_CPU, "reset"],
			"rebuild() emits simulation_rebuilt(BACKEND_CPU), reset() emits simulation_reset")
	await _free(water)


func _test_a_scene_with_baked_water_runs_from_it_exactly() -> void:
	print("-- a scene whose PipeWater has baked water (initial_state), saved, loaded and run")
	var water: PipeWater = await _make_stirred_water()
	var whole := Rect2i(Vector2i.ZERO, water.grid_size)
	var state: PipeWaterState = water.save_state()
	var depths: PackedInt32Array = water.get_water_region(whole)
	var total: float = water.get_total_water()
	await _free(water)
	var folder := "user://baked_scene_test"
	DirAccess.make_dir_recursive_absolute(folder)
	var scene_path := folder + "/level.tscn"
	var state_path := Bake.path_for(scene_path, NodePath("Water"), "Water")
	_check(Bake.store(state, state_path) == OK, "the state is stored beside the scene as %s"
			% state_path)
	var level := Node3D.new()
	var baked: PipeWater = ClassDB.instantiate(&"PipeWater")
	baked.name = "Water"
	baked.backend = PipeWater.BACKEND_CPU
	baked.grid_size = whole.size
	baked.show_mesh = false
	baked.initial_state = state
	level.add_child(baked)
	baked.owner = level
	var packed := PackedScene.new()
	packed.pack(level)
	level.free()
	_check(ResourceSaver.save(packed, scene_path) == OK, "the scene is saved as %s" % scene_path)
	# Nothing holds the state now: loading the scene reads it from its file.
	state = null
	packed = null
	var loaded := ResourceLoader.load(scene_path, "", ResourceLoader.CACHE_MODE_IGNORE) as PackedScene
	var run: Node3D = loaded.instantiate()
	root.add_child(run)
	var started: PipeWater = run.get_node("Water")
	var ledger: Dictionary = started.get_water_ledger()
	var quantum: float = started.get_depth_quantum()
	print("saved %.6f m³; the run starts with %.6f m³ (ledger initial %.6f m³)" % [total,
			started.get_total_water(), ledger["initial"]])
	_check(started.get_water_region(whole) == depths,
			"the run starts from the baked depths, cell for cell to the quantum")
	_check(absf(ledger["initial"] - total) < 0.5 * quantum,
			"and with the baked total water to the quantum")
	for i in 30:
		started.step(1.0 / 30.0)
	var after: Dictionary = started.get_water_ledger()
	_near(after["total"], after["expected"], 0.5 * quantum, "it runs on with a balanced ledger")
	await _free(run)


func _test_a_baked_state_compresses_on_disk() -> void:
	print("-- the demo's baked water on disk, with and without compression")
	var state := ResourceLoader.load(DEMO_BAKED_WATER) as PipeWaterState
	_check(state != null, "%s loads as a PipeWaterState" % DEMO_BAKED_WATER)
	if state == null:
		return
	var cells: float = state.grid_size.x * state.grid_size.y
	var sizes := {}
	for flags: int in [0, ResourceSaver.FLAG_COMPRESS]:
		var path := "user://baked_size_%d.res" % flags
		ResourceSaver.save(state, path, flags)
		sizes[flags] = FileAccess.get_file_as_bytes(path).size()
		DirAccess.remove_absolute(ProjectSettings.globalize_path(path))
	var committed := FileAccess.get_file_as_bytes(DEMO_BAKED_WATER).size()
	print(("%s × %s cells: state %d bytes (%.2f a cell); .res %d bytes (%.2f a cell), " +
			"compressed %d bytes (%.2f a cell); the committed file %d bytes") % [
			state.grid_size.x, state.grid_size.y, state.data.size(), state.data.size() / cells,
			sizes[0], sizes[0] / cells, sizes[ResourceSaver.FLAG_COMPRESS],
			sizes[ResourceSaver.FLAG_COMPRESS] / cells, committed])
	_check(sizes[ResourceSaver.FLAG_COMPRESS] < sizes[0],
			"compression makes the baked water smaller on disk")
	_check(committed < sizes[0], "the demo's file is stored compressed, as Bake stores it")


func _test_a_level_edge_fills_a_dry_basin_towards_its_level() -> void:
	print("-- a dry 16 × 8 m basin, west edge BOUNDARY_LEVEL at 1 m")
	var water: PipeWater = await _make_cpu_water(Vector2i(16, 8), -1.0, Vector3.ZERO)
	water.paused = true
	water.boundary_west = PipeWater.BOUNDARY_LEVEL
	water.boundary_level_west = 1.0
	_check(water.boundary_west == 3, "BOUNDARY_LEVEL is 3")
	water.clear_last_error()
	water.boundary_level_west = 2.0e6
	_check(water.boundary_level_west == 1.0 and water.get_last_error().contains("boundary_level"),
			"boundary_level_west = 2e6 is refused: \"%s\"" % water.get_last_error())
	_near(water.get_total_water(), 0.0, 0.0, "the basin starts dry")
	for i in 240:
		water.step(0.25)
	var depth: float = water.get_depth(Vector3(0, 0, 0))
	var ledger: Dictionary = water.get_water_ledger()
	print("after 60 s: depth at the centre %.3f m, boundary_in %.2f m³" % [
			depth, ledger["boundary_in"]])
	_near(depth, 1.0, LEVEL_TOLERANCE, "the basin has filled to the 1 m level")
	_check(ledger["boundary_in"] > 64.0, "the water came in across the edge")
	_near(ledger["total"], ledger["expected"], VOLUME_TOLERANCE, "ledger: total = expected")
	await _free(water)


func _test_an_initial_current_flows_at_once_and_after_reset() -> void:
	print("-- set_initial_current in a 1 m, 32 × 8 m channel")
	var water: PipeWater = await _make_cpu_water(Vector2i(32, 8), 1.0, Vector3.ZERO)
	water.paused = true
	var inside := Vector3(0.5, 0, 0.5)
	var outside := Vector3(12.5, 0, 0.5)
	_check(water.set_initial_current(Rect2(-4, -4, 8, 8), Vector2(0.5, 0.0)),
			"set_initial_current accepts a region and 0.5 m/s along +X")
	var flow: Vector3 = water.get_flow_velocity(inside)
	print("flow inside %s, outside %s m/s" % [flow, water.get_flow_velocity(outside)])
	_near(flow.x, 0.5, SPEED_TOLERANCE, "the water in the region flows at 0.5 m/s at once")
	_near(water.get_flow_velocity(outside).length(), 0.0, SPEED_TOLERANCE, "outside it is still")
	water.step(1.0)
	water.reset()
	_near(water.get_flow_velocity(inside).x, 0.5, SPEED_TOLERANCE, "reset() brings it back")
	water.clear_last_error()
	_check(not water.set_initial_current(Rect2(-4, -4, 8, 8), Vector2(2000.0, 0.0))
			and water.get_last_error().contains("velocity")
			and water.get_last_error().contains("1000"),
			"a 2000 m/s current is refused: \"%s\"" % water.get_last_error())
	water.clear_last_error()
	_check(not water.set_initial_velocity(PackedVector2Array([Vector2.ONE]))
			and water.get_last_error().contains("velocities"),
			"one velocity for 256 cells is refused: \"%s\"" % water.get_last_error())
	var field := PackedVector2Array()
	field.resize(32 * 8)
	field.fill(Vector2(0.0, -0.25))
	_check(water.set_initial_velocity(field), "set_initial_velocity takes one per cell")
	_near(water.get_flow_velocity(outside).z, -0.25, SPEED_TOLERANCE,
			"every cell flows at -0.25 m/s along Z")
	await _free(water)


func _test_momentum_advection_carries_a_flood_farther() -> void:
	print("-- momentum_advection: released water runs farther with it; turning it off keeps the water")
	var fronts: Array[float] = []
	for advect in [true, false]:
		var water: PipeWater = await _make_cpu_water(Vector2i(96, 8), 0.0, Vector3.ZERO)
		water.momentum_advection = advect
		var added: float = water.add_water(Vector3(-40, 0, 0), 120.0, 6.0)
		for i in 90:
			water.step(1.0 / 30.0)
		var front := -48.0
		for x in range(-48, 48):
			if water.get_depth(Vector3(x + 0.5, 0, 0.5)) > 0.01:
				front = x + 0.5
		fronts.append(front)
		print("   momentum_advection = %s: after 3 s the 1 cm front is at x = %.1f m"
			% [advect, front])
		_near(water.get_total_water(), added, VOLUME_TOLERANCE,
			"advection %s: the water is all there" % advect)
		water.momentum_advection = not advect
		for i in 10:
			water.step(1.0 / 30.0)
		_check(water.momentum_advection == (not advect), "momentum_advection reads back what was set")
		_near(water.get_total_water(), added, VOLUME_TOLERANCE,
			"switching advection mid-flow keeps the water")
		await _free(water)
	_check(fronts[0] > fronts[1] + 2.0,
		"the front runs farther with advection (%.1f m) than without (%.1f m)" % [fronts[0], fronts[1]])



func _test_a_hull_floats_displaces_water_and_pushes_a_wake() -> void:
	print("-- a 2 x 1 x 2 m crate of 2000 kg on a PipeWaterBody in a 3 m pool of 64 x 32 m")
	var water: PipeWater = await _make_cpu_water(Vector2i(64, 32), 3.0, Vector3.ZERO)
	var before: float = water.get_total_water()
	var crate: RigidBody3D = _make_crate(Vector3(-20.0, 3.6, 0.0), Vector3(2.0, 1.0, 2.0), 2000.0,
			water)
	root.add_child(crate)
	for i in 600:
		await physics_frame
	var hull: Node3D = crate.get_child(1)
	var displaced: float = hull.get(&"displaced_volume")
	# Afloat, the hull displaces its mass in water: 2000 kg / 1000 kg/m³ = 2 m³, so its bottom
	# sits 0.5 m under the level and its centre at the level.
	var level: float = hull.get(&"water_level")
	print("displaced %.4f m³ (expected 2), crate at %.4f m, level %.4f m, vertical speed %.4f m/s" % [
			displaced, crate.global_position.y, level, crate.linear_velocity.y])
	_near(displaced, 2.0, 0.04, "the floating hull displaces its mass in water (2 %)")
	_near(crate.global_position.y, level, 0.05, "the crate floats half in")
	_near(water.get_total_water(), before, 0.01, "displacing water neither adds nor removes any")
	# Faster than the waves (√(g·3 m) = 5.4 m/s): nothing can run ahead of it.
	print("-- the same crate towed at 8 m/s along +X leaves a wake")
	crate.freeze = true
	crate.freeze_mode = RigidBody3D.FREEZE_MODE_KINEMATIC
	for i in 180:
		crate.global_position.x = -20.0 + 8.0 * float(i) / 60.0
		await physics_frame
	var x: float = crate.global_position.x
	var behind: float = 0.0
	var ahead: float = 0.0
	for k in 5:
		for z in [-3.0, 0.0, 3.0]:
			var dz: float = z
			behind += absf(water.get_height(Vector3(x - 3.0 - k, 0.0, dz)) - level)
			ahead += absf(water.get_height(Vector3(x + 3.0 + k, 0.0, dz)) - level)
	print("mean |surface - level| behind %.4f m, ahead %.4f m" % [behind / 15.0, ahead / 15.0])
	_check(behind > 2.0 * ahead, "the towed crate's wake stands behind it")
	_check(water.push_water(Vector3(5, 0, 5), Vector3(3, 0, 0), 2.0), "push_water accepts a push")
	await physics_frame
	var pushed: Vector3 = water.get_flow_velocity(Vector3(5, 0, 5))
	print("pushed towards +X at 3 m/s: flow %s" % pushed)
	_check(pushed.x > 0.5, "push_water moves the water along +X")
	_near(water.get_total_water(), before, 0.01, "wakes and pushes move no water")
	await _free(crate)
	for i in 5:
		await physics_frame
	_check(is_finite(water.get_total_water()), "the water stays finite after the crate is freed")
	await _free(water)


func _test_a_hull_without_a_collision_shape_floats_without_spinning() -> void:
	print("-- a crate of 1000 kg on a 2 x 1 x 2 m hull but no CollisionShape3D: Godot gives it no")
	print("   inertia, so the water's torque is left out (with a warning): it floats, not spinning")
	var water: PipeWater = await _make_cpu_water(Vector2i(32, 32), 3.0, Vector3.ZERO)
	var crate: RigidBody3D = _make_crate(Vector3(0.0, 3.4, 0.0), Vector3(2.0, 1.0, 2.0), 1000.0,
			water, false)
	crate.rotation = Vector3(0.3, 0.0, 0.2)
	root.add_child(crate)
	for i in 300:
		await physics_frame
	var hull: Node3D = crate.get_child(0)
	var displaced: float = hull.get(&"displaced_volume")
	var spin: float = crate.angular_velocity.length()
	print("displaced %.4f m³ (mass 1000 kg: about 1 m³, tilted), spin %.6f rad/s" % [displaced,
			spin])
	_check(is_finite(spin) and spin < 1.0e-3, "the shapeless body takes no torque from the water")
	_check(is_finite(crate.global_position.y) and absf(displaced - 1.0) < 0.1,
			"the shapeless body still floats with its mass in water (10 %)")
	await _free(crate)
	await _free(water)


func _test_bad_hulls_and_pushes_are_refused_safely() -> void:
	print("-- bad hull sizes and pushes are refused; a body freed mid-frame leaves the water safe")
	var water: PipeWater = await _make_cpu_water(Vector2i(16, 16), 2.0, Vector3.ZERO)
	var crate: RigidBody3D = _make_crate(Vector3(0.0, 2.0, 0.0), Vector3(2.0, 1.0, 2.0), 500.0,
			water)
	root.add_child(crate)
	var hull: Node3D = crate.get_child(1)
	hull.set(&"radius", -1.0)
	hull.set(&"size", Vector3(0.0, 1.0, 1.0))
	hull.set(&"drag", NAN)
	_check(hull.get(&"radius") == 0.5, "a negative radius is refused (radius stays 0.5)")
	_check(hull.get(&"size") == Vector3(2.0, 1.0, 2.0), "a zero side is refused")
	_check(hull.get(&"drag") == 2.0, "a NaN drag is refused")
	_check(not water.push_water(Vector3(NAN, 0, 0), Vector3.ONE, 1.0), "a NaN position is refused")
	_check(not water.push_water(Vector3.ZERO, Vector3(INF, 0, 0), 1.0), "an infinite push is refused")
	_check(not water.push_water(Vector3.ZERO, Vector3.ONE, -2.0), "a negative radius is refused")
	var far: RigidBody3D = _make_crate(Vector3(5000.0, 2.0, 0.0), Vector3.ONE, 100.0, water)
	root.add_child(far)
	await physics_frame
	crate.queue_free()
	await physics_frame
	await physics_frame
	var total: float = water.get_total_water()
	_check(is_finite(total) and absf(total - 512.0) < 0.01,
			"after a freed body and one far off the grid the water is intact (%.4f m³)" % total)
	_check(far.get_child(1).get(&"displaced_volume") == 0.0, "a body off the grid displaces nothing")
	await _free(far)
	await _free(water)


## [param water] rebuilt on [param backend]; false (with a SKIP line) when it does not run there.
func _on_backend(water: PipeWater, backend: int, what: String) -> bool:
	water.backend = backend
	water.rebuild()
	if water.active_backend != backend:
		print("SKIP: %s: backend %d is not available here (%s)" % [
				what, backend, water.get_backend_description()])
		return false
	return true


func _test_the_depth_limit_is_refused_naming_the_property_and_its_range() -> void:
	print("-- requests that put more than 2048 m of water into a cell (each prints an error)")
	var water: PipeWater = await _make_cpu_water(Vector2i(8, 8), 1.0, Vector3.ZERO)
	water.clear_last_error()
	water.initial_water_level = 3000.0
	var message: String = water.get_last_error()
	_check(water.initial_water_level == 1.0 and message.contains("initial_water_level")
			and message.contains("2048"),
			"initial_water_level = 3000 m over ground at 0 m is refused, value kept: \"%s\"" % message)
	water.clear_last_error()
	var added: float = water.add_water(Vector3(0.5, 0, 0.5), 3000.0, 0.0)
	message = water.get_last_error()
	_check(added == 0.0 and message.contains("add_water") and message.contains("2048"),
			"add_water of 3000 m³ on one 1 m² cell adds nothing: \"%s\"" % message)
	water.clear_last_error()
	added = water.fill_basin(Vector3(0.5, 2500.0, 0.5))
	message = water.get_last_error()
	_check(added == 0.0 and message.contains("fill_basin") and message.contains("2048"),
			"fill_basin to 2500 m adds nothing: \"%s\"" % message)
	water.clear_last_error()
	var id: int = water.add_source(Vector3(0.5, 0, 0.5), 3000.0, 0.0)
	message = water.get_last_error()
	_check(id == -1 and message.contains("rate") and message.contains("-2048 ..= 2048 m³/s"),
			"a 3000 m³/s source on one 1 m² cell is refused with the largest rate: \"%s\"" % message)
	water.clear_last_error()
	water.boundary_north = PipeWater.BOUNDARY_INFLOW
	water.inflow_rate_north = 1.0e6
	water.step(0.01)
	message = water.get_last_error()
	_check(message.contains("inflow_rate_north") and message.contains("2048"),
			"an inflow of 1e6 m³/s through 8 cells is refused: \"%s\"" % message)
	var ledger: Dictionary = water.get_water_ledger()
	_near(ledger["total"], 8.0 * 8.0 * 1.0, VOLUME_TOLERANCE, "and the water stays as it was")
	await _free(water)


func _test_nearly_full_cells_take_exactly_what_fits() -> void:
	for backend: int in [PipeWater.BACKEND_CPU, PipeWater.BACKEND_GPU]:
		print("-- add_water into cells 1 mm short of the limit, backend %d" % backend)
		var water: PipeWater = await _make_cpu_water(Vector2i(8, 8), MAX_DEPTH - 0.001, Vector3.ZERO)
		if not _on_backend(water, backend, "nearly full cells"):
			await _free(water)
			continue
		var before: Dictionary = water.get_water_ledger()
		var placed: float = water.add_water(Vector3(0.5, 0, 0.5), 1.0, 0.0)
		var after: Dictionary = water.get_water_ledger()
		var entered: float = after["added"] - before["added"]
		print("   asked 1 m³, placed %.9f m³, the ledger counts %.9f m³" % [placed, entered])
		_check(placed > 0.0 and placed < 0.002, "about the 1 mm of room arrives (%.6f m³)" % placed)
		_near(entered, placed, 1.0e-12, "add_water returns exactly what the ledger counts")
		_near(after["total"], after["expected"], 0.0, "the mass identity holds")
		var depth: float = water.get_depth(Vector3(0.5, 0, 0.5))
		_check(depth <= MAX_DEPTH, "no cell passes the limit (%.4f m)" % depth)
		await _free(water)


func _test_wgpu_reads_back_only_the_tiles_queries_touch_unless_the_textures_are_used() -> void:
	print("-- readback_bytes on wgpu: tiles for queries, every cell for used textures")
	var water: PipeWater = await _make_cpu_water(Vector2i(64, 64), 1.0, Vector3.ZERO)
	if not _on_backend(water, PipeWater.BACKEND_GPU, "wgpu readback"):
		await _free(water)
		return
	var point := Vector3(3.0, 0, -5.0)
	for i in 3:
		water.get_depth(point)
		water.step(1.0 / 60.0)
	var tiles: int = water.get_frame_stats()["readback_bytes"] - READBACK_SLEEP_REPORT_BYTES
	var grid_bytes: int = 64 * 64 * READBACK_CELL_BYTES
	_check(tiles > READBACK_HEADER_BYTES and tiles <= READBACK_HEADER_BYTES + 4 * READBACK_TILE_BYTES
			and (tiles - READBACK_HEADER_BYTES) % READBACK_TILE_BYTES == 0,
			("with no texture in use a frame reads the header and the queried tiles: %d bytes "
			+ "(the grid's texels: %d)") % [tiles, grid_bytes])
	_near(water.get_depth(point), 1.0, HEIGHT_TOLERANCE, "the query reads its tiles' water")
	var held: Texture2D = water.height_texture
	water.step(1.0 / 60.0)
	water.step(1.0 / 60.0)
	var full: int = water.get_frame_stats()["readback_bytes"]
	_check(full == READBACK_HEADER_BYTES + grid_bytes + READBACK_SLEEP_REPORT_BYTES,
			"while a script holds the texture a frame reads every cell: %d bytes" % full)
	var image: Image = water.get_height_image()
	_near(image.get_pixel(40, 10).g, 1.0, HEIGHT_TOLERANCE,
			"and the texture shows the water far from the query")
	held = null
	await _free(water)


func _test_a_lost_wgpu_device_moves_the_water_to_the_cpu() -> void:
	print("-- simulate_device_loss() on wgpu (prints a PipeWater warning)")
	var water: PipeWater = await _make_cpu_water(Vector2i(24, 24), 1.0, Vector3.ZERO)
	if not _on_backend(water, PipeWater.BACKEND_GPU, "a lost wgpu device"):
		_check(not water.simulate_device_loss(), "the CPU backend has no device to lose")
		await _free(water)
		return
	var held: Texture2D = water.height_texture
	water.add_water(Vector3(3, 0, 3), 20.0, 3.0)
	for i in 5:
		water.step(1.0 / 60.0)
	var before: Dictionary = water.get_water_ledger()
	var rebuilt: Array[int] = []
	water.simulation_rebuilt.connect(func(active: int) -> void: rebuilt.append(active))
	_check(water.simulate_device_loss(), "simulate_device_loss() loses the wgpu device")
	water.step(1.0 / 60.0)
	water.step(1.0 / 60.0)
	_check(water.active_backend == PipeWater.BACKEND_CPU,
			"the water goes on on the CPU (active_backend %d)" % water.active_backend)
	_check(rebuilt == [PipeWater.BACKEND_CPU], "simulation_rebuilt is emitted once: %s" % [rebuilt])
	var after: Dictionary = water.get_water_ledger()
	_near(after["total"], before["total"], VOLUME_TOLERANCE, "the water is all still there (walls)")
	_near(after["total"], after["expected"], VOLUME_TOLERANCE,
			"the mass identity holds across the loss")
	_check(water.height_texture is ImageTexture, "the textures are filled on the CPU now")
	held = null
	var fresh: PipeWater = await _make_cpu_water(Vector2i(16, 16), 1.0, Vector3.ZERO)
	_check(_on_backend(fresh, PipeWater.BACKEND_GPU, "a new node after the loss"),
			"a new node runs on a fresh wgpu device (%s)" % fresh.get_backend_description())
	fresh.step(0.1)
	var ledger: Dictionary = fresh.get_water_ledger()
	_near(ledger["total"], ledger["expected"], VOLUME_TOLERANCE, "and its ledger holds")
	await _free(fresh)


func _test_detail_waves_ring_without_moving_water() -> void:
	print("-- detail waves: a ripple rings, the water does not move")
	var water: PipeWater = await _make_cpu_water(Vector2i(32, 32), 2.0, Vector3(5, 1, 0))
	var texture: Texture2D = water.detail_texture
	_check(water.detail_waves and texture != null,
			"detail_waves is on by default, detail_texture exists")
	var ledger_before: Dictionary = water.get_water_ledger()
	var at := Vector3(6.0, 0.0, 1.0)
	_check(water.add_ripple(at, 0.2, 2.0), "add_ripple reaches the window")
	water.step(1.0 / 60.0)
	var plain: float = water.get_height(at)
	var waved: float = water.get_height(at, true)
	_near(plain, 3.0, HEIGHT_TOLERANCE, "get_height without detail is the pool's surface")
	_check(waved - plain > 0.1, "get_height(position, true) adds the ripple: %.4f m over %.4f m" % [
			waved - plain, plain])
	# The headless renderer keeps no texels (get_image() answers its first image): the texture's
	# own size and format say what it was given.
	var image_texture := texture as ImageTexture
	_check(image_texture != null and image_texture.get_size() == Vector2(256, 256)
			and image_texture.get_format() == Image.FORMAT_RGBAH,
			"detail_texture is a 256×256 RGBAH ImageTexture on the CPU backend (%s, %s)" % [
				texture.get_size(), image_texture.get_format() if image_texture else -1])
	for i in 60:
		water.step(1.0 / 60.0)
	var ledger_after: Dictionary = water.get_water_ledger()
	_check(ledger_after["total"] == ledger_before["total"]
			and ledger_after["expected"] == ledger_before["expected"],
			"a second of ringing waves moved no water: total %.6f m³ before and after" % [
				ledger_after["total"]])
	water.detail_waves = false
	water.step(1.0 / 60.0)
	_check(water.detail_texture.get_width() == 1 and not water.add_ripple(at, 0.2, 2.0),
			"off, the layer shows one calm texel and add_ripple does nothing")
	_near(water.get_height(at, true), water.get_height(at), 0.0, "off, heights have no detail")
	await _free(water)


func _test_bad_ripples_and_detail_settings_are_refused() -> void:
	print("-- bad ripples and detail settings (each should print a PipeWater error)")
	var water: PipeWater = await _make_cpu_water(Vector2i(20, 20), 2.0, Vector3.ZERO)
	var cases: Array = [
		[Vector3(NAN, 0, 0), 0.1, 1.0, "global_position"], [Vector3.ZERO, 11.0, 1.0, "strength"],
		[Vector3.ZERO, NAN, 1.0, "strength"], [Vector3.ZERO, 0.1, 0.0, "radius"],
		[Vector3.ZERO, 0.1, -1.0, "radius"], [Vector3.ZERO, 0.1, 1.0e9, "radius"],
	]
	for case: Array in cases:
		water.clear_last_error()
		var reached: bool = water.add_ripple(case[0], case[1], case[2])
		var message: String = water.get_last_error()
		_check(not reached and message.contains(case[3]) and message.contains("valid range"),
				"add_ripple(%s, %s, %s) is refused naming %s and its range: \"%s\"" % [
					case[0], case[1], case[2], case[3], message])
	for case: Array in [["detail_window", 8], ["detail_subdivision", 0], ["rain_rate", -1.0],
			["detail_damping", NAN], ["detail_max_celerity", 0.0], ["rain_drop_height", 5.0]]:
		var property: String = case[0]
		var before: Variant = water.get(property)
		water.clear_last_error()
		water.set(property, case[1])
		_check(water.get(property) == before and water.get_last_error().contains(property),
				"%s = %s is refused, value kept: \"%s\"" % [property, case[1], water.get_last_error()])
	await _free(water)

