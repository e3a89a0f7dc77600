extends SceneTree
## Takes the demo's pictures for README.md and the pages in docs/, as the demo draws them.
##
## In a window (Forward+), from the repository root after cargo xtask build:
## [codeblock]
## xvfb-run -a -s "-screen 0 1280x720x24" $GODOT --rendering-driver vulkan \
##     --resolution 1280x720 --path godot_project -s res://demo/pictures.gd -- --out=/tmp/pictures
## [/codeblock]
## It loads the demo scene and saves [code]start.png[/code] (the first view, after two seconds
## of the spring), then runs the simulation on with the node's [method PipeWater.step]: ten
## seconds of the spring, a notch dug through the dam as the dig tool would, twenty seconds of
## the flood. Then it saves [code]flood.png[/code] (the first view again), [code]river.png[/code]
## (the river below the dam, close) and [code]shore.png[/code] (the lake's shore). The panel is
## hidden unless [code]--panel[/code] is given. With [code]--hills[/code] it draws the rolling
## hills landscape instead and saves [code]hills.png[/code] after twenty seconds of the spring.
## With [code]--wake[/code] it lets the demo run live for at least [constant WAKE_SECONDS] s,
## until the motor boat is under way on the reservoir (its hull coupled with the water every
## physics frame), then stops the world and saves [code]wake.png[/code], looking at the boat from
## behind. With
## [code]--splash[/code] it lets the demo run live for [constant SPLASH_WARMUP] s, drops a crate
## from 8 m beside the boat's course and saves [code]splash.png[/code]
## [constant SPLASH_AFTER] s after it hits the water. During both the detail waves' window
## follows the boat or the crate ([member PipeWater.detail_follow]). [code]--no-detail[/code]
## turns the water's detail waves off, for the same pictures without them (saved with
## [code]_no_detail[/code] in their names).

const MAIN_SCENE := "res://demo/main.tscn"
## Simulated seconds per manual step while the story runs.
const STEP := 0.25
## Frames drawn before a picture is saved (the flow-map animation and the shadows settle).
const SETTLE_FRAMES := 3
## Seconds of the live demo before the wake picture, at the least and at the most: it is taken
## the first moment after [constant WAKE_SECONDS] that the boat makes [constant WAKE_SPEED] m/s
## afloat (its hull displacing [constant WAKE_AFLOAT_VOLUME] m³, near its 1.2 t).
const WAKE_SECONDS := 5.0
const WAKE_LIMIT_SECONDS := 60.0
const WAKE_SPEED := 2.5
const WAKE_AFLOAT_VOLUME := 1.0
## Seconds of the live demo before the crate is dropped, and after it hits the water.
const SPLASH_WARMUP := 3.0
const SPLASH_AFTER := 0.7

var _main: Node3D
var _water: PipeWater
var _camera: Camera3D
var _out: String = "user://pictures"
var _suffix: String = ""


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	# The demo drops its boat with a random heading: the same seed gives the same boat, so that
	# the pictures with and without detail waves show the same moment.
	seed(7)
	var panel: bool = false
	var hills: bool = false
	var wake: bool = false
	var splash: bool = false
	var detail: bool = true
	for argument in OS.get_cmdline_user_args():
		if argument.begins_with("--out="):
			_out = argument.get_slice("=", 1)
		elif argument == "--panel":
			panel = true
		elif argument == "--hills":
			hills = true
		elif argument == "--wake":
			wake = true
		elif argument == "--splash":
			splash = true
		elif argument == "--no-detail":
			detail = false
	DirAccess.make_dir_recursive_absolute(_out)
	_main = (load(MAIN_SCENE) as PackedScene).instantiate()
	if hills:
		_main.set("terrain_kind", 1)
	root.add_child(_main)
	_main.get_node("Hud").visible = panel
	_water = _main.get("water")
	_camera = _main.get("camera")
	_water.detail_waves = detail
	_suffix = "" if detail else "_no_detail"
	if splash:
		await _save_splash()
		quit(0)
		return
	if wake:
		await _save_wake()
		quit(0)
		return
	if hills:
		_look(_camera.get("target"), 230.0, -0.6, 0.6)
		await _run_simulation(20.0)
		await _save("hills")
		quit(0)
		return
	await _run_simulation(2.0)
	await _save("start")
	await _run_simulation(10.0)
	var landscape: RefCounted = _main.get("landscape")
	var dam: Vector2 = landscape.get("dam_position")
	var cell: float = _main.get("cell_size")
	for i in 9:
		var along: float = (i - 4) * 1.5 * cell
		_water.modify_terrain(_main.call("to_world", dam + Vector2(along, 0.0)), -2.2, 3.0 * cell)
	await _run_simulation(20.0)
	await _save("flood")
	var river: Vector3 = _main.call("to_world", dam + Vector2(34.0 * cell, -18.0 * cell))
	_look(river + Vector3(0.0, 3.0, 0.0), 55.0 * cell, -1.05, 0.42)
	await _save("river")
	var lake: Vector3 = _main.call("to_world", dam + Vector2(84.0 * cell, -20.0 * cell))
	_look(lake + Vector3(0.0, 1.0, 0.0), 34.0 * cell, 1.9, 0.34)
	await _save("shore")
	quit(0)


## Runs the demo live (water and physics at 60 Hz) until the boat is under way with the picture
## switched off, stops the world and saves the motor boat and its wake, seen from behind.
func _save_wake() -> void:
	Engine.physics_ticks_per_second = 60
	Engine.max_physics_steps_per_frame = 1
	var boat: RigidBody3D = _main.get_node("Boats").get_child(0)
	_water.detail_follow = _water.get_path_to(boat)
	root.disable_3d = true
	# The autopilot slows down where the water ahead is shallow (and a boat dropped with a random
	# heading may start towards a bank): the picture waits until it is under way.
	var hull: Node = boat.get_node("WaterHull")
	for i in roundi(WAKE_LIMIT_SECONDS * 60.0):
		await physics_frame
		var under_way: bool = boat.linear_velocity.length() >= WAKE_SPEED \
				and hull.get("displaced_volume") >= WAKE_AFLOAT_VOLUME
		if i % 120 == 0:
			print("%5.1f s: %.2f m/s, %.3f m³ displaced" % [i / 60.0, boat.linear_velocity.length(),
					hull.get("displaced_volume")])
		if i >= roundi(WAKE_SECONDS * 60.0) and under_way:
			break
	root.disable_3d = false
	var bow: Vector3 = boat.global_basis.x
	bow.y = 0.0
	bow = bow.normalized()
	print("boat at %s, %.2f m/s, hull displaces %.3f m³" % [boat.global_position,
			boat.linear_velocity.length(), boat.get_node("WaterHull").get("displaced_volume")])
	# The camera keeps following its target while the rest of the world stands still.
	_camera.process_mode = Node.PROCESS_MODE_ALWAYS
	paused = true
	_look(boat.global_position - bow * 5.0, 17.0, atan2(-bow.x, -bow.z) + 0.5, 0.62)
	await _save("wake")


## Runs the demo live for [constant SPLASH_WARMUP] s, drops a crate 12 m to the side of the boat,
## waits until [constant SPLASH_AFTER] s after its hull meets the water, stops the world and saves
## the splash.
func _save_splash() -> void:
	Engine.physics_ticks_per_second = 60
	Engine.max_physics_steps_per_frame = 1
	root.disable_3d = true
	for i in roundi(SPLASH_WARMUP * 60.0):
		await physics_frame
	var boat: RigidBody3D = _main.get_node("Boats").get_child(0)
	var side: Vector3 = boat.global_basis.z
	side.y = 0.0
	var crate: RigidBody3D = _main.call("drop_crate", boat.global_position + side.normalized() * 12.0)
	_water.detail_follow = _water.get_path_to(crate)
	var hull: Node = crate.get_node("Hull")
	var frames: int = 0
	while float(hull.get("displaced_volume")) <= 0.0 and frames < 600:
		await physics_frame
		frames += 1
	for i in roundi(SPLASH_AFTER * 60.0):
		await physics_frame
	root.disable_3d = false
	print("crate at %s, %.3f m³ under water" % [crate.global_position, hull.get("displaced_volume")])
	_camera.process_mode = Node.PROCESS_MODE_ALWAYS
	paused = true
	_look(crate.global_position, 16.0, _camera.get("yaw"), 0.7)
	await _save("splash")


## Runs the simulation for [param seconds] with the picture switched off, a step per frame.
## The boats are frozen where they are: the story steps the water far faster than physics runs,
## and a paused PipeWater couples no hulls, so they would sink.
func _run_simulation(seconds: float) -> void:
	for boat: RigidBody3D in _main.get_node("Boats").get_children():
		boat.freeze = true
	_water.paused = true
	root.disable_3d = true
	var done: float = 0.0
	while done < seconds:
		_water.step(STEP)
		done += STEP
		await process_frame
	root.disable_3d = false


func _look(target: Vector3, distance: float, yaw: float, pitch: float) -> void:
	_camera.set("target", target)
	_camera.set("distance", distance)
	_camera.set("yaw", yaw)
	_camera.set("pitch", pitch)


func _save(name: String) -> void:
	for i in SETTLE_FRAMES:
		await process_frame
	await RenderingServer.frame_post_draw
	var path: String = _out.path_join(name + _suffix + ".png")
	root.get_texture().get_image().save_png(path)
	print("saved %s" % path)
