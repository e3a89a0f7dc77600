extends "res://tests/test_base.gd"
## Headless tests of sleeping tiles ([member PipeWater.can_sleep]) on the CPU backend: still water
## is not stepped, an edit wakes the tiles around it, and turning it off steps every cell. That the
## water is the same bit for bit either way is tested in Rust (tests/sleeping.rs).


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	print("PipeWater sleeping tests, Godot %s" % Engine.get_version_info().string)
	await _test_a_pool_at_rest_sleeps_and_an_edit_wakes_its_tiles()
	_finish()


func _test_a_pool_at_rest_sleeps_and_an_edit_wakes_its_tiles() -> void:
	print("-- can_sleep: a 128² pool at rest on the CPU (tiles of 32 cells)")
	var water: PipeWater = await _make_cpu_water(Vector2i(128, 128), 1.0, Vector3.ZERO)
	_check(water.can_sleep, "can_sleep is on by default")
	for i in 3:
		water.step(1.0 / 60.0)
	var stats: Dictionary = water.get_frame_stats()
	print("   at rest: %d of %d tiles awake, %d cells stepped" % [stats.get("awake_tiles", -1),
			stats.get("tiles", -1), stats.get("cells_stepped", -1)])
	_check(stats.get("tiles", 0) == 16, "the grid is cut into 4 × 4 tiles")
	_check(stats.get("awake_tiles", -1) == 0 and stats.get("cells_stepped", -1) == 0,
			"still water is not stepped")
	var tiles: Image = water.get_awake_tiles()
	_check(tiles != null and tiles.get_size() == Vector2i(4, 4) and tiles.get_pixel(0, 0).r == 0.0,
			"get_awake_tiles() is one dark pixel a tile")
	# Local (-60, -60) lies in cell (4, 4): tile (0, 0).
	water.add_water(Vector3(-60.0, 0.0, -60.0), 2.0, 2.0)
	water.step(1.0 / 60.0)
	stats = water.get_frame_stats()
	tiles = water.get_awake_tiles()
	print("   after add_water in tile (0, 0): %d tiles awake, %d cells stepped in %d substeps" % [
			stats["awake_tiles"], stats["cells_stepped"], stats["substeps"]])
	var woken: bool = tiles.get_pixel(0, 0).r == 1.0 and tiles.get_pixel(1, 1).r == 1.0
	_check(stats["awake_tiles"] == 4 and woken
			and tiles.get_pixel(3, 3).r == 0.0,
			"the edit wakes its tile and the three around it (a corner tile)")
	water.can_sleep = false
	water.step(1.0 / 60.0)
	stats = water.get_frame_stats()
	_check(stats["awake_tiles"] == 16 and stats["cells_stepped"] == 128 * 128 * stats["substeps"],
			"with can_sleep off every cell is stepped (%d)" % stats["cells_stepped"])
	await _free(water)
