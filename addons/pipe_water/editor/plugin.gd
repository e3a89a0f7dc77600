@tool
extends EditorPlugin
## PipeWater's editor tools (Project Settings → Plugins → PipeWater).
##
## [br]- With a [PipeWater] or a [PipeWaterWorld] selected, the toolbar above the 3D viewport
## offers brushes: add and
## remove water, fill a basin to a clicked shore, raise, lower and smooth the terrain, with a
## radius and a strength. The left button paints; each stroke, press to release, is one step of
## the editor's undo history (Ctrl+Z), whose payload is the rectangle of cells the stroke
## changed, before and after, exact to the quantum (see stroke.gd).
## [br]- "Bake" stores the water as it stands (painted, and after [code]simulate_in_editor[/code]
## ran) in the node's [code]initial_state[/code], as a compressed binary resource beside the
## scene (bake.gd): running the scene starts from exactly that water.
## "Clear" empties it. Both are undoable. Painting without baking is not saved with the scene;
## the toolbar says so.
## [br]- Every PipeWaterSource is drawn with its radius (source_gizmo.gd).
##
## The brushes run on the node's own methods ([method PipeWater.paint_water],
## [method PipeWater.get_water_changes], [method PipeWaterWorld.begin_change_record], …), which
## work without the editor too.

const Stroke := preload("res://addons/pipe_water/editor/stroke.gd")
const Toolbar := preload("res://addons/pipe_water/editor/toolbar.gd")
const SourceGizmo := preload("res://addons/pipe_water/editor/source_gizmo.gd")
const Bake := preload("res://addons/pipe_water/editor/bake.gd")
## This script, as the editor loads it from plugin.cfg.
const SCRIPT_PATH := "res://addons/pipe_water/editor/plugin.gd"
## Points of the brush's outline in the viewport.
const OUTLINE_POINTS := 64
## Colour of the outline for water brushes and for terrain brushes.
const WATER_OUTLINE := Color(0.35, 0.75, 1.0)
const TERRAIN_OUTLINE := Color(1.0, 0.78, 0.35)

## The toolbar (its [code]tool[/code], [code]radius[/code] and [code]strength[/code] are the
## brush's).
var toolbar: Toolbar
## The water being edited (a [PipeWater] or a [PipeWaterWorld]), or null.
var water: Node3D

var _gizmo: SourceGizmo
var _stroke: Stroke
var _camera: Camera3D
## The global point under the mouse, or null.
var _hover: Variant = null
## Strokes made since the last bake, by water (instance id).
var _unbaked := {}


## The plugin the editor running [param tree] made from plugin.cfg, or null (not enabled, or not
## an editor): for scripts that drive the tools, such as the tests.
static func running_in(tree: SceneTree) -> EditorPlugin:
	for node: Node in tree.root.find_children("*", "EditorPlugin", true, false):
		var script: Script = node.get_script()
		if script != null and script.resource_path == SCRIPT_PATH:
			return node as EditorPlugin
	return null


func _enter_tree() -> void:
	_gizmo = SourceGizmo.new(get_undo_redo())
	add_node_3d_gizmo_plugin(_gizmo)
	toolbar = Toolbar.new()
	toolbar.bake_pressed.connect(func() -> void: bake(water))
	toolbar.clear_pressed.connect(func() -> void: clear_bake(water))
	toolbar.fit_pressed.connect(func() -> void: fit_to_terrain(water as PipeWater))
	add_control_to_container(CONTAINER_SPATIAL_EDITOR_MENU, toolbar)
	toolbar.hide()


func _exit_tree() -> void:
	end_stroke()
	remove_node_3d_gizmo_plugin(_gizmo)
	remove_control_from_container(CONTAINER_SPATIAL_EDITOR_MENU, toolbar)
	toolbar.queue_free()


func _handles(object: Object) -> bool:
	return object is PipeWater or object is PipeWaterWorld


func _edit(object: Object) -> void:
	end_stroke()
	water = object as Node3D if _handles(object) else null
	toolbar.set_fit_available(water is PipeWater)
	_show_bake_status()


func _make_visible(visible: bool) -> void:
	toolbar.visible = visible
	if not visible:
		end_stroke()
		_hover = null
		update_overlays()


func _process(delta: float) -> void:
	if _stroke != null:
		_stroke.apply(delta)


## Before the scene is saved: painting that was not baked is not part of the scene.
func _apply_changes() -> void:
	for id: int in _unbaked:
		var node := instance_from_id(id) as Node3D
		if node != null and node.is_inside_tree():
			push_warning(("PipeWater %s: the water painted since the last bake is not saved with "
					+ "the scene; press Bake in its toolbar to keep it.") % node.name)


func _forward_3d_gui_input(viewport_camera: Camera3D, event: InputEvent) -> int:
	if water == null or toolbar.tool == Stroke.Tool.NONE:
		return AFTER_GUI_INPUT_PASS
	_camera = viewport_camera
	var motion := event as InputEventMouseMotion
	if motion != null:
		_hover = pick(viewport_camera, motion.position)
		if _stroke != null:
			_stroke.point = _hover
		update_overlays()
		return AFTER_GUI_INPUT_STOP if _stroke != null else AFTER_GUI_INPUT_PASS
	var button := event as InputEventMouseButton
	if button == null or button.button_index != MOUSE_BUTTON_LEFT:
		return AFTER_GUI_INPUT_PASS
	if button.pressed:
		_hover = pick(viewport_camera, button.position)
		if _hover == null:
			return AFTER_GUI_INPUT_PASS
		begin_stroke(water, toolbar.tool, _hover)
	else:
		end_stroke()
	return AFTER_GUI_INPUT_STOP


func _forward_3d_draw_over_viewport(overlay: Control) -> void:
	if water == null or _hover == null or _camera == null or toolbar.tool == Stroke.Tool.NONE:
		return
	var color := TERRAIN_OUTLINE if Stroke.changes_terrain(toolbar.tool) else WATER_OUTLINE
	var centre: Vector3 = _hover
	var points := PackedVector2Array()
	for i in OUTLINE_POINTS + 1:
		var angle := TAU * i / OUTLINE_POINTS
		var at := centre + Vector3(cos(angle), 0.0, sin(angle)) * toolbar.radius
		# A world's heights wait for its device each: its outline stays level with the centre.
		var height: float = centre.y if water is PipeWaterWorld else water.get_height(at)
		at.y = height if is_finite(height) else centre.y
		if _camera.is_position_behind(at):
			return
		points.append(_camera.unproject_position(at))
	overlay.draw_polyline(points, color, 2.0, true)
	overlay.draw_circle(_camera.unproject_position(centre), 3.0, color)


## The global point of [member water]'s surface (or dry ground) under [param screen_position]
## of [param camera]'s viewport, or null.
func pick(camera: Camera3D, screen_position: Vector2) -> Variant:
	if water == null:
		return null
	return water.intersect_ray(camera.project_ray_origin(screen_position),
			camera.project_ray_normal(screen_position))


## Starts a stroke of [param brush] on [param on_water] at the global point [param at] (a fill
## acts at once), with the toolbar's radius and strength. Ends a stroke still open first.
func begin_stroke(on_water: Node3D, brush: Stroke.Tool, at: Vector3) -> void:
	end_stroke()
	_stroke = Stroke.new(on_water, brush, toolbar.radius, toolbar.strength, at)


## Moves the open stroke's brush to the global point [param at] and paints there for
## [param delta] seconds (the editor paints each frame while the button is held).
func stroke_to(at: Vector3, delta: float) -> void:
	if _stroke != null:
		_stroke.point = at
		_stroke.apply(delta)


## Ends the open stroke and puts it in the undo history of its scene; true when it changed
## something.
func end_stroke() -> bool:
	if _stroke == null:
		return false
	var stroke := _stroke
	_stroke = null
	var changes: Dictionary = stroke.finish()
	if changes.is_empty():
		return false
	var undo_redo := get_undo_redo()
	undo_redo.create_action(changes["name"], UndoRedo.MERGE_DISABLE, stroke.water)
	undo_redo.add_do_method(stroke.water, changes["method"], changes["region"], changes["after"])
	undo_redo.add_undo_method(stroke.water, changes["method"], changes["region"],
			changes["before"])
	# The stroke has painted already: committing records it without doing it again.
	undo_redo.commit_action(false)
	_unbaked[stroke.water.get_instance_id()] = true
	_show_bake_status()
	return true


## Stores [param target]'s water (a [PipeWater]'s or a [PipeWaterWorld]'s) as it stands in its
## [code]initial_state[/code], saved beside the edited scene (see bake.gd), as one undoable
## action. Needs the scene saved once.
func bake(target: Node3D) -> Error:
	var root := EditorInterface.get_edited_scene_root()
	if target == null or root == null or not (root == target or root.is_ancestor_of(target)):
		return ERR_INVALID_PARAMETER
	if root.scene_file_path == "":
		toolbar.show_status("Save the scene first: the water is stored beside it.", true)
		return ERR_UNCONFIGURED
	var state := Bake.state_of(target)
	if state == null:
		toolbar.show_status("Could not read the water: %s" % target.get_last_error(), true)
		return FAILED
	var path := Bake.path_for(root.scene_file_path, root.get_path_to(target), target.name)
	var old: PipeWaterState = target.initial_state
	var old_path := old.resource_path if old != null else ""
	var undo_redo := get_undo_redo()
	undo_redo.create_action("PipeWater: bake the water", UndoRedo.MERGE_DISABLE, target)
	undo_redo.add_do_method(self, &"_set_baked", target, state, path)
	undo_redo.add_undo_method(self, &"_set_baked", target, old, old_path)
	undo_redo.commit_action()
	_unbaked.erase(target.get_instance_id())
	_show_bake_status()
	return OK if target.initial_state == state else FAILED


## Empties [param target]'s [member PipeWater.initial_state] as one undoable action (the file
## stays, for the undo).
func clear_bake(target: Node3D) -> void:
	if target == null or target.initial_state == null:
		return
	var undo_redo := get_undo_redo()
	undo_redo.create_action("PipeWater: clear the baked water", UndoRedo.MERGE_DISABLE, target)
	undo_redo.add_do_property(target, &"initial_state", null)
	undo_redo.add_undo_property(target, &"initial_state", target.initial_state)
	undo_redo.commit_action()
	_show_bake_status()


## Fits [param target] to its [member PipeWater.terrain_source] (one cell per vertex) as one
## undoable action: grid_size, cell_size and the transform before and after.
func fit_to_terrain(target: PipeWater) -> void:
	if target == null:
		return
	var before := [target.grid_size, target.cell_size, target.transform]
	if not target.fit_to_terrain_source(1):
		toolbar.show_status(target.get_last_error(), true)
		return
	var after := [target.grid_size, target.cell_size, target.transform]
	var undo_redo := get_undo_redo()
	undo_redo.create_action("PipeWater: fit to the terrain", UndoRedo.MERGE_DISABLE, target)
	for i in 3:
		var property: StringName = [&"grid_size", &"cell_size", &"transform"][i]
		undo_redo.add_do_property(target, property, after[i])
		undo_redo.add_undo_property(target, property, before[i])
	undo_redo.commit_action(false)
	toolbar.show_status("Fitted: %d × %d cells of %.3f m" % [after[0].x, after[0].y, after[1]])


## Sets [param state] as [param target]'s baked water, saved to [param path] first when it has
## one (the undo of a bake saves the older state back over the newer one).
func _set_baked(target: Node3D, state: PipeWaterState, path: String) -> void:
	if state != null and path != "":
		var error := Bake.store(state, path)
		if error != OK:
			toolbar.show_status("Could not save %s (error %d)" % [path, error], true)
			return
	target.initial_state = state
	_show_bake_status()


func _show_bake_status() -> void:
	if water == null:
		toolbar.show_status("")
	elif _unbaked.has(water.get_instance_id()):
		toolbar.show_status("Painted since the last bake: not saved with the scene", true)
	elif water.initial_state != null:
		toolbar.show_status("Baked: %s" % water.initial_state.resource_path.get_file())
	else:
		toolbar.show_status("")
