extends SceneTree
## Main-thread cost of a PipeWater node per frame, as the node reports it (get_frame_stats):
## step_usec (stepping: encoding and submitting on the GPU backend, the whole step on the CPU)
## and texture_usec (taking the newest snapshot, snapshot_usec, then copying it into both
## textures).
##
## A benchmark, not a test. From the repository root, after cargo xtask build --release:
## [codeblock]
## $GODOT --headless --path godot_project --fixed-fps 60 -s res://bench/node_frame.gd -- 1024 2048
## [/codeblock]
## Arguments: grid sides (default 1024 2048), and "cpu", "gpu" (wgpu) or "rd" (Godot's
## RenderingDevice, which needs a window: no --headless) to force a backend. Every frame 16
## probes query get_height and get_flow_velocity, as 16 floating bodies would. Headless, Godot's
## dummy renderer takes the texture updates without uploading them; run it with a display (and
## without --headless) to include the upload. Besides the node's own figures it prints the
## bytes a frame read back to the host and the wall time between frames (the frame rate the
## whole engine reached, GPU included, with vsync off).

const WARMUP_FRAMES := 30
const MEASURED_FRAMES := 120
const PROBES := 16


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	var sides: Array[int] = []
	var backend: int = PipeWater.BACKEND_AUTO
	for arg: String in OS.get_cmdline_user_args():
		if arg == "cpu":
			backend = PipeWater.BACKEND_CPU
		elif arg == "gpu":
			backend = PipeWater.BACKEND_GPU
		elif arg == "rd":
			backend = PipeWater.BACKEND_RENDERING_DEVICE
		elif arg.is_valid_int():
			sides.append(arg.to_int())
	if sides.is_empty():
		sides = [1024, 2048]
	DisplayServer.window_set_vsync_mode(DisplayServer.VSYNC_DISABLED)
	print("Godot %s, video adapter: %s" % [Engine.get_version_info().string,
			RenderingServer.get_video_adapter_name()])
	for side: int in sides:
		await _measure(side, backend)
	quit(0)


func _measure(side: int, backend: int) -> void:
	var water: PipeWater = ClassDB.instantiate(&"PipeWater")
	water.backend = backend
	water.grid_size = Vector2i(side, side)
	water.cell_size = 1.0
	water.show_mesh = false
	var noise := FastNoiseLite.new()
	noise.frequency = 4.0 / side
	var hills: Image = noise.get_image(side, side)
	water.set_terrain_from_image(hills, 4.0, 0.0)
	water.initial_water_level = 2.0
	root.add_child(water)
	water.rebuild()
	water.add_water(Vector3.ZERO, 0.02 * side * side, side * 0.1)
	var steps := PackedInt64Array()
	var textures := PackedInt64Array()
	var snapshots := PackedInt64Array()
	var substeps := PackedInt64Array()
	var readback := PackedInt64Array()
	var queries := PackedInt64Array()
	var walls := PackedInt64Array()
	var probes: Array[Vector3] = []
	for i in PROBES:
		probes.append(Vector3((i % 4 - 1.5) * side * 0.2, 0.0, (i / 4 - 1.5) * side * 0.2))
	var last := Time.get_ticks_usec()
	for frame in WARMUP_FRAMES + MEASURED_FRAMES:
		await physics_frame
		var started := Time.get_ticks_usec()
		for p in probes:
			water.get_height(p)
			water.get_flow_velocity(p)
		var queried := Time.get_ticks_usec() - started
		var wall := started - last
		last = started
		if frame < WARMUP_FRAMES:
			continue
		queries.append(queried)
		walls.append(wall)
		var stats: Dictionary = water.get_frame_stats()
		readback.append(stats.get("readback_bytes", 0))
		steps.append(stats["step_usec"])
		textures.append(stats["texture_usec"])
		snapshots.append(stats["snapshot_usec"])
		substeps.append(stats.get("substeps", 0))
	print(("%d² %s: step %.2f ms, textures %.2f ms (snapshot %.2f ms), %d queries %.3f ms, " +
			"main thread %.2f ms; frame %.2f ms; %d bytes read back a frame " +
			"(medians of %d frames; %d substeps a frame)") % [
		side, water.get_backend_description(), _median(steps) / 1000.0,
		_median(textures) / 1000.0, _median(snapshots) / 1000.0, 2 * PROBES,
		_median(queries) / 1000.0,
		(_median(steps) + _median(textures) + _median(queries)) / 1000.0,
		_median(walls) / 1000.0, int(_median(readback)), MEASURED_FRAMES, _median(substeps)])
	water.queue_free()
	await process_frame


func _median(values: PackedInt64Array) -> float:
	var sorted := values.duplicate()
	sorted.sort()
	return float(sorted[sorted.size() / 2])
