extends "res://tests/test_base.gd"
## Smoke test of the release zip: run in a fresh project holding nothing but the unzipped
## [code]addons/pipe_water/[/code], this script and test_base.gd. cargo xtask test builds the zip,
## makes the project under target/godot-versions/<version>/package/ and runs, on each Godot binary:
## [codeblock]
## $GODOT --headless --path <project> --import
## $GODOT --headless --path <project> --fixed-fps 60 -s res://tests/test_package_smoke.gd
## [/codeblock]
## Checks that the extension loaded from the zip's library and registered its classes, that the
## addon's script class is known, and that a pool in a walled basin holds its level and its
## volume. Ends with PIPEWATER TESTS PASSED (exit code 0) or PIPEWATER TESTS FAILED (exit code 1).

const EXTENSION_PATH := "res://addons/pipe_water/pipe_water.gdextension"
const RUST_CLASSES: Array[StringName] = [&"PipeWater", &"PipeWaterState", &"PipeWaterBody"]
## Cells along each side of the basin, and their size (m).
const GRID := 32
const CELL := 1.0
## The basin's floor and walls (m, local Y), and the pool's level.
const FLOOR := 0.0
const WALL := 5.0
const LEVEL := 2.0
const FRAMES := 120
## The surface stays within this of the level (m): still water is a fixed point of the step;
## heights read back as f32 and bilinear over cells, as in run_tests.gd.
const HEIGHT_TOLERANCE := 1.0e-3
## The volume stays within this (m³): depths are whole quanta of 2⁻²⁰ m, none gained or lost.
const VOLUME_TOLERANCE := 1.0e-3


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	print("PipeWater package smoke test, Godot %s" % Engine.get_version_info().string)
	_check(GDExtensionManager.is_extension_loaded(EXTENSION_PATH),
			"%s is loaded (extensions: %s)" % [EXTENSION_PATH,
			GDExtensionManager.get_loaded_extensions()])
	for name in RUST_CLASSES:
		_check(ClassDB.class_exists(name), "the %s class is registered" % name)
	var script_classes: Array = ProjectSettings.get_global_class_list().map(
			func(entry: Dictionary) -> String: return entry["class"])
	_check("BuoyancyProbe" in script_classes,
			"the addon's BuoyancyProbe script class is known (%s)" % [script_classes])
	if not ClassDB.class_exists(&"PipeWater"):
		_finish()
		return
	await _test_a_walled_pool_holds_its_level()
	_finish()


func _test_a_walled_pool_holds_its_level() -> void:
	print("-- a %d×%d basin of %s m cells, walls %s m high, filled to %s m" % [GRID, GRID, CELL,
			WALL, LEVEL])
	var water: Node3D = ClassDB.instantiate(&"PipeWater")
	var heights := PackedFloat32Array()
	heights.resize(GRID * GRID)
	for y in GRID:
		for x in GRID:
			var edge: bool = x == 0 or y == 0 or x == GRID - 1 or y == GRID - 1
			heights[y * GRID + x] = WALL if edge else FLOOR
	water.set(&"grid_size", Vector2i(GRID, GRID))
	water.set(&"cell_size", CELL)
	water.set(&"terrain_heights", heights)
	water.set(&"initial_water_level", LEVEL)
	water.set(&"show_mesh", false)
	root.add_child(water)
	await process_frame
	print("backend: %s" % water.call(&"get_backend_description"))
	var expected: float = float((GRID - 2) * (GRID - 2)) * CELL * CELL * (LEVEL - FLOOR)
	var before: float = water.call(&"get_total_water")
	_near(before, expected, VOLUME_TOLERANCE, "the basin holds (%d - 2)² cells × %s m of water"
			% [GRID, LEVEL - FLOOR])
	for i in FRAMES:
		await process_frame
	var centre := Vector3(0.3, 0.0, -0.6)
	var corner := Vector3(-GRID * CELL / 2.0 + 1.5, 0.0, GRID * CELL / 2.0 - 1.5)
	_near(water.call(&"get_height", centre), LEVEL, HEIGHT_TOLERANCE,
			"after %d frames the surface at the centre is the level" % FRAMES)
	_near(water.call(&"get_height", corner), LEVEL, HEIGHT_TOLERANCE,
			"and beside the walls")
	_near(water.call(&"get_total_water"), before, VOLUME_TOLERANCE,
			"and the volume is what it was")
	water.queue_free()
	await process_frame
