extends SceneTree
## Takes the world demo's picture for README.md, as the demo draws it.
##
## In a window (Forward+), from the repository root after cargo xtask build:
## [codeblock]
## xvfb-run -a -s "-screen 0 1280x720x24" $GODOT --rendering-driver vulkan \
##     --resolution 1280x720 --path godot_project -s res://demo/world/world_picture.gd \
##     -- --out=/tmp/pictures [--seconds=30]
## [/codeblock]
## It loads the world demo, holds the camera above the reservoir looking over the dam
## (the demo's [code]view_breach()[/code]), breaches the dam, steps the world
## [constant FLOOD_SECONDS] s (or [code]--seconds=[/code]) with [method PipeWaterWorld.step]
## (the sea's edge walled: it is out of view), and saves [code]world.png[/code]. It prints
## the world's figures (pages, device memory) and the seconds each simulated second took here.

const SCENE := "res://demo/world/world_demo.tscn"
## Simulated seconds of the flood before the picture.
const FLOOD_SECONDS := 30.0
const STEP := 1.0 / 30.0
## Frames drawn before the picture is saved (the window's textures and the shadows settle).
const SETTLE_FRAMES := 4


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	var out: String = "user://pictures"
	var flood_seconds: float = FLOOD_SECONDS
	for argument in OS.get_cmdline_user_args():
		if argument.begins_with("--out="):
			out = argument.trim_prefix("--out=")
		elif argument.begins_with("--seconds="):
			flood_seconds = clampf(argument.trim_prefix("--seconds=").to_float(), STEP, 600.0)
	DirAccess.make_dir_recursive_absolute(out)
	var demo: Node3D = (load(SCENE) as PackedScene).instantiate()
	demo.set("flight_speed", 0.0)
	root.add_child(demo)
	await process_frame
	var world: PipeWaterWorld = demo.get_node_or_null("World")
	if world == null or not world.is_ready():
		print("WORLD PICTURE FAILED: no world (%s)" % (world.get_last_error() if world else "none"))
		quit(1)
		return
	world.running = false
	# The sea is out of view and would flood 8 km of coast step after step: on a software
	# renderer that is minutes of stepping for nothing the picture shows.
	world.boundary_south = PipeWater.BOUNDARY_WALL
	demo.call("view_breach")
	demo.call("breach_dam")
	var started: int = Time.get_ticks_msec()
	var steps: int = int(flood_seconds / STEP)
	for i in steps:
		world.step(STEP)
		if i % 60 == 59:
			print("%.0f s of the flood in %.1f s here" % [(i + 1) * STEP,
					(Time.get_ticks_msec() - started) / 1000.0])
	var seconds: float = (Time.get_ticks_msec() - started) / 1000.0
	world.refresh_window()
	for i in SETTLE_FRAMES:
		await process_frame
	var image: Image = root.get_viewport().get_texture().get_image()
	var path: String = out.path_join("world.png")
	image.save_png(path)
	var report: Dictionary = world.get_world_report()
	print("world picture: %s; %.0f s simulated in %.1f s here; %s" % [path, flood_seconds, seconds,
			report])
	print("WORLD PICTURE SAVED")
	quit(0)
