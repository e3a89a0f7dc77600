extends "res://tests/test_base.gd"
## Headless tests of saving and loading the water: save_state and load_state, PipeWaterState
## resources on disk, bad states refused with the water kept, and the asynchronous save and load
## (save_state_async, load_state_async, load_state_file_async) against the synchronous ones;
## a PipeWaterWorld's save kept as a PipeWaterState resource and started from as its initial_state.
##
## Run from the repository root (cargo xtask test does this when GODOT is set):
## [codeblock]
## $GODOT --headless --path godot_project --fixed-fps 60 -s res://tests/test_persistence.gd
## [/codeblock]
## Every check prints the property it states and the figures it compares. The run ends with
## PIPEWATER TESTS PASSED (exit code 0) or PIPEWATER TESTS FAILED (exit code 1).

## Volumes compare within this (m³).
const VOLUME_TOLERANCE := 1.0e-3
## What "exactly" means for values that must come back bit for bit.
const EXACT := 0.0


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	print("PipeWater persistence tests, Godot %s" % Engine.get_version_info().string)
	if not ClassDB.class_exists(&"PipeWater"):
		_check(false, "the PipeWater class is registered (is the library in addons/pipe_water/bin?)")
		_finish()
		return
	await _test_load_state_restores_the_saved_water_and_ledger_exactly()
	await _test_a_state_saved_as_res_and_tres_loads_back()
	await _test_bad_states_are_refused_and_the_water_is_kept()
	await _test_async_save_and_load_match_the_synchronous_ones()
	await _test_async_save_and_load_report_bad_paths_and_files()
	await _test_a_large_async_load_lands_over_frames_while_the_water_waits()
	await _test_a_world_starts_from_its_initial_state()
	_finish()


## The ledger's entries, for comparing two moments.
func _ledger_values(water: PipeWater) -> Array:
	var ledger: Dictionary = water.get_water_ledger()
	var keys: Array = ["initial", "added", "removed", "boundary_in", "boundary_out", "total"]
	return keys.map(func(key: String) -> float: return ledger[key])


func _test_load_state_restores_the_saved_water_and_ledger_exactly() -> void:
	print("-- save_state, change the water, load_state")
	var water: PipeWater = await _make_stirred_water()
	var state: PipeWaterState = water.save_state()
	_check(state != null and state.data.size() > 0, "save_state returns a PipeWaterState")
	_check(state.grid_size == Vector2i(20, 20), "it records grid_size %s" % state.grid_size)
	# One second of steps: the pool was paused from the start.
	_near(state.simulated_time, 1.0, 1.0e-4, "it records the simulated time")
	var total: float = water.get_total_water()
	var ledger: Array = _ledger_values(water)
	water.add_water(Vector3(0, 0, 0), 40.0, 4.0)
	for i in 30:
		water.step(1.0 / 30.0)
	_check(water.get_total_water() > total + 30.0, "the water changed after the save")
	_check(water.load_state(state), "load_state accepts the state")
	_near(water.get_total_water(), total, EXACT, "the total water is the saved one")
	var now: Array = _ledger_values(water)
	print("ledger saved %s, loaded %s" % [ledger, now])
	_check(now == ledger, "the ledger is the saved one, entry for entry")
	_check(water.get_source_ids().size() == 1, "the source is back")
	water.step(0.5)
	var after: Dictionary = water.get_water_ledger()
	_near(after["total"], after["expected"], VOLUME_TOLERANCE, "it runs on: total = expected")
	await _free(water)


func _test_a_state_saved_as_res_and_tres_loads_back() -> void:
	print("-- ResourceSaver / ResourceLoader round trip")
	var water: PipeWater = await _make_stirred_water()
	var state: PipeWaterState = water.save_state()
	var total: float = water.get_total_water()
	for path: String in ["user://pipewater_test_state.res", "user://pipewater_test_state.tres"]:
		_check(ResourceSaver.save(state, path) == OK, "ResourceSaver.save writes %s" % path)
		var loaded: Resource = ResourceLoader.load(path, "", ResourceLoader.CACHE_MODE_IGNORE)
		var back: PipeWaterState = loaded as PipeWaterState
		_check(back != null, "ResourceLoader.load gives a PipeWaterState back")
		if back == null:
			continue
		_check(back.data == state.data, "its %d bytes are the saved ones" % back.data.size())
		_check(back.grid_size == state.grid_size, "its grid_size is kept")
		water.add_water(Vector3(1, 0, 1), 10.0, 2.0)
		_check(water.load_state(back), "load_state accepts it")
		_near(water.get_total_water(), total, EXACT, "the saved total water is back")
		DirAccess.remove_absolute(ProjectSettings.globalize_path(path))
	await _free(water)


func _test_bad_states_are_refused_and_the_water_is_kept() -> void:
	print("-- load_state with bad states (each should print a PipeWater error)")
	var small: PipeWater = await _make_cpu_water(Vector2i(12, 12), 1.0, Vector3.ZERO)
	var other_grid: PipeWaterState = small.save_state()
	await _free(small)
	var water: PipeWater = await _make_stirred_water()
	var total: float = water.get_total_water()
	var good: PipeWaterState = water.save_state()
	var truncated := PipeWaterState.new()
	truncated.data = good.data.slice(0, good.data.size() - 100)
	var corrupt := PipeWaterState.new()
	corrupt.data = good.data.duplicate()
	corrupt.data[corrupt.data.size() - 5] ^= 0x55
	var future := PipeWaterState.new()
	var future_bytes: PackedByteArray = good.data.duplicate()
	future_bytes.encode_u32(8, 99)
	future.data = future_bytes
	var cases: Array = [
		[other_grid, "grid"], [truncated, "truncated"], [corrupt, "corrupt"],
		[future, "version"], [null, "null"],
	]
	for case: Array in cases:
		water.clear_last_error()
		var accepted: bool = water.load_state(case[0])
		var message: String = water.get_last_error()
		_check(not accepted and message.contains(case[1]),
				"a %s state is refused: \"%s\"" % [case[1], message])
		_near(water.get_total_water(), total, EXACT, "and the water is kept")
	await _free(water)


## Awaits physics frames, stepping [param water] by hand in each, until [param outcomes] holds
## an entry (a signal's arguments) or [param frames] passed; returns the frames it took.
func _step_until_signal(water: PipeWater, outcomes: Array, frames: int) -> int:
	var waited := 0
	while outcomes.is_empty() and waited < frames:
		water.step(1.0 / 30.0)
		await physics_frame
		waited += 1
	return waited


## The water's depths, total and ledger, to compare two moments exactly.
func _water_fingerprint(water: PipeWater) -> Array:
	return [water.get_water_region(Rect2i(Vector2i.ZERO, water.grid_size)), _ledger_values(water)]


func _test_async_save_and_load_match_the_synchronous_ones() -> void:
	print("-- save_state_async to a file while the water steps, load_state_file_async back:"
		+ " as save_state / load_state")
	var water: PipeWater = await _make_stirred_water()
	var path := "user://pipewater_async_test.pwstate"
	var at_save: PipeWaterState = water.save_state()
	var saved_fingerprint: Array = _water_fingerprint(water)
	var saves: Array = []
	var loads: Array = []
	water.state_saved.connect(
		func(p: String, error: int, state: PipeWaterState) -> void: saves.append([p, error, state])
	)
	water.state_loaded.connect(func(p: String, error: int) -> void: loads.append([p, error]))
	_check(water.save_state_async(path) == OK, "save_state_async starts")
	_check(water.is_saving_state(), "is_saving_state is true while it runs")
	_check(water.save_state_async(path) == ERR_BUSY, "a second save while one runs is ERR_BUSY")
	var frames: int = await _step_until_signal(water, saves, 600)
	_check(saves.size() == 1, "state_saved is emitted once, after %d frames of stepping" % frames)
	if saves.size() != 1:
		await _free(water)
		return
	var async_state: PipeWaterState = saves[0][2]
	_check(saves[0][0] == path and saves[0][1] == OK and async_state != null,
			"state_saved(%s, %s) brings a PipeWaterState" % [saves[0][0], error_string(saves[0][1])])
	_check(async_state.data == at_save.data,
			"its %d bytes are save_state's of the frame the save began on" % async_state.data.size())
	_check(FileAccess.get_file_as_bytes(path) == at_save.data, "the file holds the same bytes")
	_check(not water.is_saving_state(), "is_saving_state is false once it is emitted")
	_check(_water_fingerprint(water) != saved_fingerprint, "the water stepped on while it saved")

	_check(water.load_state_file_async(path) == OK, "load_state_file_async starts")
	_check(water.is_loading_state(), "is_loading_state is true while it runs")
	_check(water.load_state_async(at_save) == ERR_BUSY, "a second load while one runs is ERR_BUSY")
	frames = await _step_until_signal(water, loads, 600)
	_check(loads.size() == 1 and loads[0][0] == path and loads[0][1] == OK,
			"state_loaded(%s, OK) after %d frames" % [path, frames])
	var loaded_fingerprint: Array = _water_fingerprint(water)
	print(
		"saved ledger %s, after the asynchronous load %s"
		% [saved_fingerprint[1], loaded_fingerprint[1]]
	)
	_check(loaded_fingerprint == saved_fingerprint, "depths and ledger are the saved ones, exactly")
	for i in 20:
		water.step(1.0 / 30.0)
	var async_run: Array = _water_fingerprint(water)
	_check(water.load_state(at_save), "load_state of the synchronous save")
	for i in 20:
		water.step(1.0 / 30.0)
	_check(_water_fingerprint(water) == async_run,
			"20 steps after the asynchronous load equal 20 steps after load_state, cell for cell")
	loads.clear()
	_check(water.load_state_async(at_save) == OK, "load_state_async of a PipeWaterState starts")
	frames = await _step_until_signal(water, loads, 600)
	_check(loads.size() == 1 and loads[0][0] == "" and loads[0][1] == OK,
			"state_loaded(\"\", OK) after %d frames" % frames)
	_check(_water_fingerprint(water) == saved_fingerprint, "and the water is the saved one again")
	var after: Dictionary = water.get_water_ledger()
	_near(after["total"], after["expected"], VOLUME_TOLERANCE, "total = expected after the loads")
	DirAccess.remove_absolute(ProjectSettings.globalize_path(path))
	await _free(water)


func _test_async_save_and_load_report_bad_paths_and_files() -> void:
	print(
		"-- asynchronous saves and loads of bad paths and files"
		+ " (each should print a PipeWater error)"
	)
	var water: PipeWater = await _make_stirred_water()
	var kept: Array = _water_fingerprint(water)
	var saves: Array = []
	var loads: Array = []
	water.state_saved.connect(
		func(p: String, error: int, state: PipeWaterState) -> void: saves.append([p, error, state])
	)
	water.state_loaded.connect(func(p: String, error: int) -> void: loads.append([p, error]))
	_check(
		water.load_state_async(null) == ERR_INVALID_PARAMETER,
		"load_state_async(null) is ERR_INVALID_PARAMETER"
	)
	_check(
		water.load_state_file_async("") == ERR_INVALID_PARAMETER,
		"an empty path is ERR_INVALID_PARAMETER"
	)
	_check(
		water.save_state_async("user://no_such_folder/water.pwstate") == OK,
		"a save into a missing folder starts"
	)
	await _step_until_signal(water, saves, 600)
	_check(saves.size() == 1 and saves[0][1] == ERR_FILE_CANT_WRITE and saves[0][2] == null,
			"and ends in state_saved with ERR_FILE_CANT_WRITE and no state (%s)" % [saves])
	var good: PipeWaterState = water.save_state()
	kept = _water_fingerprint(water)
	var corrupt_path := "user://pipewater_corrupt_test.pwstate"
	var file := FileAccess.open(corrupt_path, FileAccess.WRITE)
	file.store_buffer(good.data.slice(0, good.data.size() / 2))
	file.close()
	var other := PipeWaterState.new()
	var small: PipeWater = await _make_cpu_water(Vector2i(12, 12), 1.0, Vector3.ZERO)
	other = small.save_state()
	await _free(small)
	var cases: Array = [
		["user://no_such_save.pwstate", ERR_FILE_CANT_OPEN, "no such save"],
		[corrupt_path, ERR_INVALID_DATA, "truncated"],
		[other, ERR_INVALID_DATA, "grid"],
	]
	for case: Array in cases:
		loads.clear()
		water.clear_last_error()
		var started: int = (
			water.load_state_async(case[0])
			if case[0] is PipeWaterState
			else water.load_state_file_async(case[0])
		)
		_check(started == OK, "the load of %s starts" % case[2])
		# The water must not move while we wait: nothing steps it here.
		while loads.is_empty():
			await physics_frame
		var message: String = water.get_last_error()
		_check(loads[0][1] == case[1], "%s: state_loaded with %s (%s): \"%s\"" % [
				case[2], error_string(case[1]), error_string(loads[0][1]), message])
		_check(_water_fingerprint(water) == kept, "and the water is kept")
	DirAccess.remove_absolute(ProjectSettings.globalize_path(corrupt_path))
	await _free(water)


func _test_a_large_async_load_lands_over_frames_while_the_water_waits() -> void:
	print(
		"-- load_state_async of a 1024×512 grid: applied over frames (8 MiB a frame),"
		+ " edits refused meanwhile"
	)
	var water: PipeWater = await _make_cpu_water(Vector2i(1024, 512), 1.0, Vector3.ZERO, true)
	var state: PipeWaterState = water.save_state()
	var saved_total: float = water.get_total_water()
	var saved_ledger: Array = _ledger_values(water)
	water.add_water(Vector3.ZERO, 500.0, 20.0)
	var loads: Array = []
	water.state_loaded.connect(func(p: String, error: int) -> void: loads.append([p, error]))
	_check(water.load_state_async(state) == OK, "load_state_async starts")
	var frames := 0
	var refused := 0
	var message := ""
	while loads.is_empty() and frames < 600:
		await physics_frame
		frames += 1
		if not loads.is_empty():
			break
		water.clear_last_error()
		var before: float = water.get_total_water()
		var added: float = water.add_water(Vector3(100, 0, 50), 10.0, 5.0)
		if water.get_last_error().contains("load"):
			refused += 1
			message = water.get_last_error()
			water.step(1.0 / 30.0)
			_near(
				water.get_total_water(),
				before,
				EXACT,
				"frame %d: the edit added %.3f m³ and step() moved nothing" % [frames, added]
			)
	_check(loads.size() == 1 and loads[0][1] == OK, "state_loaded(\"\", OK) after %d frames" % frames)
	_check(
		refused >= 1,
		"edits were refused on %d frames while the load was applied: \"%s\"" % [refused, message]
	)
	_near(
		water.get_total_water(),
		saved_total,
		EXACT,
		"the loaded water is the saved one, edits made before it replaced"
	)
	_check(_ledger_values(water) == saved_ledger, "and so is the ledger")
	await _free(water)


## Depth at each of [param spots] (global positions) of [param world].
func _world_depths(world: PipeWaterWorld, spots: Array) -> Array:
	return spots.map(func(spot: Vector3) -> float: return world.get_depth(spot))


## The world's ledger entries, for comparing two worlds.
func _world_ledger(world: PipeWaterWorld) -> Array:
	var ledger: Dictionary = world.get_water_ledger()
	var keys: Array = ["initial", "added", "removed", "boundary_in", "boundary_out", "held"]
	return keys.map(func(key: String) -> float: return ledger.get(key, NAN))


func _test_a_world_starts_from_its_initial_state() -> void:
	print("-- a PipeWaterWorld's save as a resource, started from as initial_state")
	var world := PipeWaterWorld.new()
	world.world_size = Vector2i(900, 700)
	world.ground_height = 6.0
	world.running = false
	root.add_child(world)
	await process_frame
	if not world.is_ready():
		_check(false, "a world exists (it needs a wgpu device): %s" % world.get_last_error())
		await _free(world)
		return
	# A basin of 2 m ground across a page corner (pages are 56 cells), a source feeding it.
	var heights := PackedFloat32Array()
	for i in 80 * 80:
		heights.append(2.0 if (i % 80 >= 8 and i % 80 < 72 and i / 80 >= 8 and i / 80 < 72) else 6.0)
	world.set_terrain_region(Rect2i(Vector2i(80, 80), Vector2i(80, 80)), heights)
	var centre := Vector3(120.5 - 450.0, 0.0, 120.5 - 350.0)
	world.add_water(centre, 3000.0, 20.0)
	var source: int = world.add_source(centre + Vector3(10, 0, 0), 2.0, 3.0)
	for i in 45:
		world.step(1.0 / 30.0)
	var spots: Array = [centre, centre + Vector3(-25, 0, 17), centre + Vector3(30, 0, -30),
			Vector3(400, 0, 300)]
	var depths: Array = _world_depths(world, spots)
	var ledger: Array = _world_ledger(world)
	var state := PipeWaterState.new()
	state.data = world.save_state()
	state.grid_size = world.world_size
	var path := "user://pipewater_world_state.res"
	_check(ResourceSaver.save(state, path, ResourceSaver.FLAG_COMPRESS) == OK,
			"the world's save is stored as a resource: %d bytes of data" % state.data.size())
	var stored: PipeWaterState = ResourceLoader.load(path, "", ResourceLoader.CACHE_MODE_IGNORE)
	_check(stored != null and stored.data == state.data, "and loads back the same")

	var copy := PipeWaterWorld.new()
	copy.world_size = Vector2i(64, 64)
	copy.ground_height = 6.0
	copy.running = false
	copy.initial_state = stored
	root.add_child(copy)
	await process_frame
	_check(copy.is_ready() and copy.world_size == Vector2i(900, 700),
			"a world given it as initial_state starts at the state's size: %s (%s)" % [
			copy.world_size, copy.get_last_error()])
	var copied: Array = _world_depths(copy, spots)
	print("   depths saved %s, started from %s" % [depths, copied])
	_check(copied == depths and depths[0] > 0.1 and depths[3] == 0.0,
			"its water is the saved water, cell for cell")
	_near(copy.get_terrain_height(centre), 2.0, EXACT, "its ground is the saved ground")
	print("   ledger saved %s, started from %s" % [ledger, _world_ledger(copy)])
	_check(_world_ledger(copy) == ledger and copy.get_water_ledger().get("exact", false),
			"its ledger is the saved one, entry for entry, and exact")
	_check(copy.remove_source(source) and not copy.remove_source(source),
			"the saved source came back under its id")
	world.remove_source(source)
	for i in 30:
		world.step(1.0 / 30.0)
		copy.step(1.0 / 30.0)
	var on: Array = _world_depths(world, spots)
	print("   a second on: the saving world %s, the one started from it %s" % [
			on, _world_depths(copy, spots)])
	_check(_world_depths(copy, spots) == on and on != depths,
			"both step on to the same water (its flow was saved too)")

	# A PipeWater's state, and an empty one, are refused when set; the state is kept.
	var small: PipeWater = await _make_cpu_water(Vector2i(12, 12), 1.0, Vector3(5000, 0, 0))
	var grid_state: PipeWaterState = small.save_state()
	await _free(small)
	for bad: PipeWaterState in [grid_state, PipeWaterState.new()]:
		copy.initial_state = bad
		print("   %s" % copy.get_last_error())
		_check(copy.initial_state == stored and copy.get_last_error().contains("initial_state"),
				"a %s state is refused when set, the previous one kept" % (
				"PipeWater's" if bad == grid_state else "empty"))
	await physics_frame
	_check(_world_depths(copy, spots) == on, "and the water is kept")

	# A world's state that fails its checks when read: reported, and the world starts dry.
	var cut := PipeWaterState.new()
	cut.data = state.data.slice(0, state.data.size() / 2)
	copy.clear_last_error()
	copy.initial_state = cut
	await physics_frame
	print("   %s" % copy.get_last_error())
	_check(copy.is_ready() and copy.get_last_error().contains("initial_state")
			and _world_depths(copy, spots) == [0.0, 0.0, 0.0, 0.0],
			"half a save as initial_state is reported and the world starts dry")
	copy.initial_state = stored
	await physics_frame
	_check(_world_depths(copy, spots) == depths, "set again, the world starts from it again")
	copy.initial_state = null
	await physics_frame
	_check(copy.is_ready() and _world_depths(copy, spots) == [0.0, 0.0, 0.0, 0.0],
			"cleared, the world starts dry")
	await _free(copy)
	await _free(world)
	DirAccess.remove_absolute(ProjectSettings.globalize_path(path))
