extends Camera3D
## Orbit/fly camera of the demo: right mouse button drag orbits, the wheel zooms, W A S D move the
## point looked at across the ground, Q and E lower and raise it.

## Point the camera orbits, global.
@export var target := Vector3.ZERO
## Distance from the target, m.
@export_range(5.0, 1000.0, 0.1, "suffix:m") var distance: float = 160.0
## Rotation about the vertical axis, radians.
@export var yaw: float = -0.6
## Angle below the horizon, radians.
@export_range(0.05, 1.5, 0.01) var pitch: float = 0.75
## Speed of W A S D Q E, m/s (times the distance / 100).
@export var move_speed: float = 40.0
## Radians per pixel of mouse motion.
@export var orbit_sensitivity: float = 0.006

var _orbiting: bool = false


func _ready() -> void:
	_apply()


func _unhandled_input(event: InputEvent) -> void:
	var button := event as InputEventMouseButton
	if button != null:
		if button.button_index == MOUSE_BUTTON_RIGHT:
			_orbiting = button.pressed
		elif button.pressed and button.button_index == MOUSE_BUTTON_WHEEL_UP:
			distance = maxf(5.0, distance * 0.9)
		elif button.pressed and button.button_index == MOUSE_BUTTON_WHEEL_DOWN:
			distance = minf(1000.0, distance * 1.1)
	var motion := event as InputEventMouseMotion
	if motion != null and _orbiting:
		yaw -= motion.relative.x * orbit_sensitivity
		pitch = clampf(pitch + motion.relative.y * orbit_sensitivity, 0.05, 1.5)


func _process(delta: float) -> void:
	var move := Vector3.ZERO
	if Input.is_physical_key_pressed(KEY_W):
		move.z -= 1.0
	if Input.is_physical_key_pressed(KEY_S):
		move.z += 1.0
	if Input.is_physical_key_pressed(KEY_A):
		move.x -= 1.0
	if Input.is_physical_key_pressed(KEY_D):
		move.x += 1.0
	if Input.is_physical_key_pressed(KEY_Q):
		move.y -= 1.0
	if Input.is_physical_key_pressed(KEY_E):
		move.y += 1.0
	if move != Vector3.ZERO:
		var flat := Vector3(move.x, 0.0, move.z).rotated(Vector3.UP, yaw)
		var speed: float = move_speed * maxf(distance / 100.0, 0.2) * delta
		target += (flat + Vector3(0.0, move.y, 0.0)) * speed
	_apply()


func _apply() -> void:
	var offset := Vector3(0.0, 0.0, distance).rotated(Vector3.RIGHT, -pitch).rotated(Vector3.UP, yaw)
	global_position = target + offset
	look_at(target, Vector3.UP)
