@tool
extends EditorNode3DGizmoPlugin
## Draws every PipeWaterSource in the 3D viewport: a circle of its radius in the node's XZ plane
## and an arrow, up for a spring, down for a drain; blue for a spring, orange for a drain, grey
## while disabled or at rate 0. The circle selects the node when clicked; its handle drags the
## radius, as one step of the editor's undo history.

## Segments of the circle.
const SEGMENTS := 48
## Colour of a spring, a drain, and a paused source.
const SPRING_COLOR := Color(0.25, 0.62, 1.0)
const DRAIN_COLOR := Color(1.0, 0.5, 0.15)
const PAUSED_COLOR := Color(0.6, 0.6, 0.6)
## Shortest circle drawn, m, so that a source of radius 0 stays visible and clickable.
const MIN_DRAWN_RADIUS := 0.25

var _undo_redo: EditorUndoRedoManager


func _init(undo_redo: EditorUndoRedoManager = null) -> void:
	_undo_redo = undo_redo
	create_material("spring", SPRING_COLOR)
	create_material("drain", DRAIN_COLOR)
	create_material("paused", PAUSED_COLOR)
	create_handle_material("handles")


func _get_gizmo_name() -> String:
	return "PipeWaterSource"


func _has_gizmo(for_node_3d: Node3D) -> bool:
	return for_node_3d.is_class("PipeWaterSource")


func _redraw(gizmo: EditorNode3DGizmo) -> void:
	gizmo.clear()
	var source := gizmo.get_node_3d()
	var radius: float = source.get("radius")
	var rate: float = source.get("rate")
	var drawn := maxf(radius, MIN_DRAWN_RADIUS)
	var lines := PackedVector3Array()
	for i in SEGMENTS:
		var a := TAU * i / SEGMENTS
		var b := TAU * (i + 1) / SEGMENTS
		lines.append(Vector3(cos(a), 0.0, sin(a)) * drawn)
		lines.append(Vector3(cos(b), 0.0, sin(b)) * drawn)
	# The arrow points the way the water goes: up out of a spring, down into a drain.
	var length := drawn * 0.8
	var up := rate >= 0.0
	var tip := Vector3.UP * length if up else Vector3.ZERO
	var tail := Vector3.ZERO if up else Vector3.UP * length
	var head := 0.25 * drawn
	var back := Vector3.DOWN * head if up else Vector3.UP * head
	lines.append(tail)
	lines.append(tip)
	for side: Vector3 in [Vector3.RIGHT, Vector3.LEFT, Vector3.FORWARD, Vector3.BACK]:
		lines.append(tip)
		lines.append(tip + side * head + back)
	gizmo.add_lines(lines, get_material(_kind(source), gizmo))
	gizmo.add_collision_segments(lines)
	gizmo.add_handles(PackedVector3Array([Vector3(radius, 0.0, 0.0)]),
			get_material("handles", gizmo), PackedInt32Array())


func _get_handle_name(_gizmo: EditorNode3DGizmo, _handle_id: int, _secondary: bool) -> String:
	return "Radius"


func _get_handle_value(gizmo: EditorNode3DGizmo, _handle_id: int, _secondary: bool) -> Variant:
	return gizmo.get_node_3d().get("radius")


func _set_handle(gizmo: EditorNode3DGizmo, _handle_id: int, _secondary: bool, camera: Camera3D,
		screen_pos: Vector2) -> void:
	var source := gizmo.get_node_3d()
	var frame := source.global_transform
	var plane := Plane(frame.basis.y.normalized(), frame.origin)
	var hit: Variant = plane.intersects_ray(camera.project_ray_origin(screen_pos),
			camera.project_ray_normal(screen_pos))
	if hit == null:
		return
	var local: Vector3 = frame.affine_inverse() * (hit as Vector3)
	source.set("radius", snappedf(Vector2(local.x, local.z).length(), 0.01))


func _commit_handle(gizmo: EditorNode3DGizmo, _handle_id: int, _secondary: bool,
		restore: Variant, cancel: bool) -> void:
	var source := gizmo.get_node_3d()
	if cancel or _undo_redo == null:
		if cancel:
			source.set("radius", restore)
		return
	_undo_redo.create_action("PipeWaterSource: radius")
	_undo_redo.add_do_property(source, "radius", source.get("radius"))
	_undo_redo.add_undo_property(source, "radius", restore)
	_undo_redo.commit_action()


## Which material draws [param source]: spring, drain, or paused.
func _kind(source: Node3D) -> String:
	var rate: float = source.get("rate")
	if not source.get("enabled") or rate == 0.0:
		return "paused"
	return "spring" if rate > 0.0 else "drain"
