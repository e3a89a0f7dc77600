extends SceneTree
## Takes the README's picture of the PipeWater tools in the editor: the demo scene open, its
## PipeWater selected with the toolbar above the 3D viewport, the add-water brush over the
## reservoir, and the spring's gizmo.
##
## In a window (Forward+), from the repository root after cargo xtask build:
## [codeblock]
## xvfb-run -a -s "-screen 0 1600x900x24" $GODOT --editor --rendering-driver vulkan \
##     --resolution 1600x900 --path godot_project -s res://demo/editor_picture.gd \
##     -- --out=docs/editor_tools.png
## [/codeblock]
## With --editor this script is the editor's SceneTree: it opens res://demo/main.tscn, selects the
## PipeWater, chooses the add-water brush, looks at the dam from the reservoir's side and moves
## the brush over the water as the mouse would, then saves the editor's window.

const MAIN_SCENE := "res://demo/main.tscn"
const Plugin := preload("res://addons/pipe_water/editor/plugin.gd")
const Stroke := preload("res://addons/pipe_water/editor/stroke.gd")
## Frames the editor gets to start, open the scene and draw it.
const SETTLE_FRAMES := 90
## The editor camera: where it stands and what it looks at (global m).
const CAMERA_AT := Vector3(-150.0, 75.0, 95.0)
const LOOK_AT := Vector3(-45.0, 0.0, -5.0)
## Where the brush is shown, as a fraction of the 3D viewport (from its top left corner).
const BRUSH_AT := Vector2(0.5, 0.62)

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
			if _frames >= SETTLE_FRAMES:
				_select_the_water()
		2:
			if _frames >= SETTLE_FRAMES / 3:
				_move_the_brush()
		3:
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
	EditorInterface.get_editor_viewport_3d(0).get_camera_3d().look_at_from_position(CAMERA_AT,
			LOOK_AT)
	_next()


func _move_the_brush() -> void:
	var viewport := EditorInterface.get_editor_viewport_3d(0)
	var motion := InputEventMouseMotion.new()
	motion.position = viewport.get_visible_rect().size * BRUSH_AT
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
