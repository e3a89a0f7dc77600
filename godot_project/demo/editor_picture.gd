extends SceneTree
## Takes docs/AUTHORING.md's picture of the PipeWater tools in the editor: the demo scene open, its
## PipeWater selected with the toolbar above the 3D viewport, the add-water brush over the
## reservoir, and the spring's gizmo at the head of the valley.
##
## In a window (Forward+), from the repository root after cargo xtask build:
## [codeblock]
## xvfb-run -a -s "-screen 0 1600x900x24" $GODOT --editor --rendering-driver vulkan \
##     --resolution 1600x900 --path godot_project -s res://demo/editor_picture.gd \
##     -- --out=docs/editor_tools.png
## [/codeblock]
## With --editor this script is the editor's SceneTree: it opens res://demo/main.tscn, selects the
## PipeWater, chooses the add-water brush, looks down the valley from above the spring and moves
## the brush over the reservoir as the mouse would, then saves the editor's window. (The windowed
## editor rewrites project.godot's comments as it saves its settings: check it out again after.)

const MAIN_SCENE := "res://demo/main.tscn"
## A scene put in front while the demo is loaded again.
const OTHER_SCENE := "res://demo/boat.tscn"
const Plugin := preload("res://addons/pipe_water/editor/plugin.gd")
const Stroke := preload("res://addons/pipe_water/editor/stroke.gd")
## Frames the editor gets to start, open the scene and draw it.
const SETTLE_FRAMES := 90
## The editor camera: where it stands and what it looks at (global m).
const CAMERA_AT := Vector3(-175.0, 38.0, 40.0)
const LOOK_AT := Vector3(-60.0, 2.0, 5.0)
## Where the brush is shown: a point of the reservoir, upstream of the dam (global m).
const BRUSH_AT := Vector3(-15.0, 6.3, 11.0)

var _out := "res://editor_tools.png"
var _phase := 0
var _frames := 0
var _done := false


func _process(_delta: float) -> bool:
	_frames += 1
	match _phase:
		0:
			_open_the_demo()
		1:
			if _frames >= SETTLE_FRAMES / 3:
				_bring_the_demo_to_the_front()
		2:
			if _frames >= SETTLE_FRAMES:
				_select_the_water()
		3:
			if _frames >= SETTLE_FRAMES / 3:
				_move_the_brush()
		4:
			if _frames >= SETTLE_FRAMES / 3:
				_save()
	return _done


func _open_the_demo() -> void:
	for argument in OS.get_cmdline_user_args():
		if argument.begins_with("--out="):
			_out = argument.get_slice("=", 1)
	if EditorInterface.get_script_editor() == null \
			or EditorInterface.get_resource_filesystem().is_scanning():
		return
	if MAIN_SCENE in EditorInterface.get_open_scenes():
		# An editor that had the demo open keeps its view in memory: it takes the one written
		# here only when the scene is loaded again while another scene is in front.
		EditorInterface.open_scene_from_path(OTHER_SCENE)
		_write_the_view()
		EditorInterface.reload_scene_from_path(MAIN_SCENE)
	else:
		_write_the_view()
		EditorInterface.open_scene_from_path(MAIN_SCENE)
	_next()


func _bring_the_demo_to_the_front() -> void:
	EditorInterface.open_scene_from_path(MAIN_SCENE)
	EditorInterface.set_main_screen_editor("3D")
	_next()


func _select_the_water() -> void:
	var scene := EditorInterface.get_edited_scene_root()
	var plugin := Plugin.running_in(self)
	if scene == null or plugin == null:
		push_error("the demo scene is not open or the PipeWater plugin is not running")
		_quit(1)
		return
	EditorInterface.get_selection().clear()
	EditorInterface.edit_node(scene.get_node("PipeWater"))
	var toolbar: Control = plugin.get("toolbar")
	toolbar.call("choose", Stroke.Tool.ADD_WATER)
	toolbar.set("radius", 14.0)
	_next()


## The editor keeps each scene's 3D view in its edit state and puts it back when it opens the
## scene (a camera moved by a script it would move back): the view looking from
## [constant CAMERA_AT] at [constant LOOK_AT] goes there first, in the editor's terms (the point
## looked at, the pitch and yaw about it, the distance).
func _write_the_view() -> void:
	var offset := CAMERA_AT - LOOK_AT
	var view := {
		"position": LOOK_AT,
		"distance": offset.length(),
		"x_rotation": asin(offset.y / offset.length()),
		"y_rotation": atan2(-offset.x, offset.z),
	}
	var state := ConfigFile.new()
	state.set_value("editor_states", "3D", {"viewports": [view]})
	var folder := EditorInterface.get_editor_paths().get_project_settings_dir()
	state.save(folder.path_join("%s-editstate-%s.cfg" % [MAIN_SCENE.get_file(),
			MAIN_SCENE.md5_text()]))


func _move_the_brush() -> void:
	var viewport := EditorInterface.get_editor_viewport_3d(0)
	var motion := InputEventMouseMotion.new()
	motion.position = viewport.get_camera_3d().unproject_position(BRUSH_AT)
	Plugin.running_in(self)._forward_3d_gui_input(viewport.get_camera_3d(), motion)
	_next()


func _save() -> void:
	var image := root.get_texture().get_image()
	var error := image.save_png(_out)
	print("saved %s (%d × %d): error %d" % [_out, image.get_width(), image.get_height(), error])
	_quit(0 if error == OK else 1)


func _quit(code: int) -> void:
	_done = true
	quit(code)


func _next() -> void:
	_phase += 1
	_frames = 0
