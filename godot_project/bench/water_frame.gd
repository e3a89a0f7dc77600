extends SceneTree
## Frame cost of the water surface shader: the demo scene drawn with the water hidden, with the
## addon's water_surface.gdshader and, when given, with another water shader (an older version,
## say), at the window's resolution, from two views: the demo's first view (water on about a
## tenth of the picture) and the reservoir from above (water on all of it).
##
## A benchmark, not a test. In a window, from the repository root after cargo xtask build
## --release:
## [codeblock]
## xvfb-run -a -s "-screen 0 1920x1080x24" $GODOT --rendering-driver vulkan \
##     --resolution 1920x1080 --path godot_project -s res://bench/water_frame.gd \
##     -- --other=/tmp/old_water_surface.gdshader
## [/codeblock]
## The spring runs for SETTLE_SECONDS with the 3D view switched off, then the simulation pauses
## and each variant draws WARMUP_FRAMES and MEASURED_FRAMES frames; it prints the medians of the
## GPU time of the viewport's rendering (timestamps) and of the wall time between frames (vsync
## off), and what the water adds to them.

const MAIN_SCENE := "res://demo/main.tscn"
const SETTLE_SECONDS := 10.0
const WARMUP_FRAMES := 3
const MEASURED_FRAMES := 8


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	DisplayServer.window_set_vsync_mode(DisplayServer.VSYNC_DISABLED)
	var other_path: String = ""
	for argument in OS.get_cmdline_user_args():
		if argument.begins_with("--other="):
			other_path = argument.get_slice("=", 1)
	print("Godot %s, %s, video adapter: %s, window %s" % [Engine.get_version_info().string,
			RenderingServer.get_video_adapter_api_version(),
			RenderingServer.get_video_adapter_name(), root.size])
	var main: Node3D = (load(MAIN_SCENE) as PackedScene).instantiate()
	root.add_child(main)
	main.get_node("Hud").visible = false
	var water: PipeWater = main.get("water")
	water.paused = true
	root.disable_3d = true
	for i in int(SETTLE_SECONDS / 0.25):
		water.step(0.25)
		await process_frame
	root.disable_3d = false
	var surface: MeshInstance3D = null
	for child in water.get_children(true):
		if child is MeshInstance3D:
			surface = child
	var ours := surface.material_override as ShaderMaterial
	var other: ShaderMaterial = null
	if other_path != "":
		other = ShaderMaterial.new()
		other.shader = Shader.new()
		other.shader.code = FileAccess.get_file_as_string(other_path)
		for parameter in ["height_texture", "flux_texture", "grid_size", "cell_size"]:
			other.set_shader_parameter(parameter, ours.get_shader_parameter(parameter))
	RenderingServer.viewport_set_measure_render_time(root.get_viewport_rid(), true)
	var camera: Camera3D = main.get("camera")
	var landscape: RefCounted = main.get("landscape")
	var above: Vector3 = main.call("to_world", landscape.get("dam_position")
			- Vector2(40.0 * float(main.get("cell_size")), 0.0))
	var views := {"first view": [], "reservoir from above": [above, 60.0, -0.6, 1.5]}
	for view: String in views:
		var setting: Array = views[view]
		if not setting.is_empty():
			camera.set("target", setting[0])
			camera.set("distance", setting[1])
			camera.set("yaw", setting[2])
			camera.set("pitch", setting[3])
		var hidden: Vector2 = await _measure(surface, null, false)
		var with_ours: Vector2 = await _measure(surface, ours, true)
		print("%s, no water: GPU %.1f ms, frame %.1f ms" % [view, hidden.x, hidden.y])
		print("%s, water_surface.gdshader: GPU %.1f ms (+%.1f), frame %.1f ms (+%.1f)" % [view,
				with_ours.x, with_ours.x - hidden.x, with_ours.y, with_ours.y - hidden.y])
		if other != null:
			var with_other: Vector2 = await _measure(surface, other, true)
			print("%s, %s: GPU %.1f ms (+%.1f), frame %.1f ms (+%.1f)" % [view, other_path,
					with_other.x, with_other.x - hidden.x, with_other.y, with_other.y - hidden.y])
	quit(0)


## Medians (ms) of the viewport's GPU time (x) and of the wall time between frames (y) with the
## surface drawn with [param material], or hidden.
func _measure(surface: MeshInstance3D, material: Material, shown: bool) -> Vector2:
	surface.visible = shown
	surface.material_override = material
	var gpu := PackedFloat64Array()
	var walls := PackedFloat64Array()
	var last := Time.get_ticks_usec()
	for frame in WARMUP_FRAMES + MEASURED_FRAMES:
		await process_frame
		var now := Time.get_ticks_usec()
		if frame >= WARMUP_FRAMES:
			walls.append((now - last) / 1000.0)
			gpu.append(RenderingServer.viewport_get_measured_render_time_gpu(
					root.get_viewport_rid()))
		last = now
	walls.sort()
	gpu.sort()
	return Vector2(gpu[gpu.size() / 2], walls[walls.size() / 2])
