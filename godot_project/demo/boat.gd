extends RigidBody3D
## The demo's motor boat: a hull that floats on its PipeWaterBody and, with [member thrust],
## drives forward (+X, the bow) and turns at [member turn_rate], so it leaves a wake.
##
## The motor works only while the hull is in water (the propeller needs it); on land or in the
## air the boat is a plain rigid body. An autopilot looks ahead with [method PipeWater.get_depth]
## and turns towards deeper water before the boat runs aground.

## How far ahead the autopilot looks, m, and at what angle to each side, rad.
const LOOK_AHEAD := 10.0
const LOOK_ANGLE := 0.5
## Turning rate when steering clear of the shore, rad/s.
const EVASIVE_TURN := 0.6
## Physics frames between two looks ahead (each is two depth queries).
const LOOK_EVERY := 10

## Forward push of the motor, N. 0 leaves the boat drifting with the water.
@export_range(0.0, 20000.0, 10.0, "or_greater", "suffix:N") var thrust: float = 0.0
## Turning rate the rudder steers towards while the motor runs, rad/s (positive: to port).
@export_range(-1.0, 1.0, 0.01, "suffix:rad/s") var turn_rate: float = 0.0
## How fast the rudder brings the turning rate to the one wanted, 1/s.
@export_range(0.0, 20.0, 0.1, "suffix:1/s") var rudder_response: float = 8.0
## The autopilot turns away from water shallower than this, m, ahead of the bow.
@export_range(0.0, 10.0, 0.1, "suffix:m") var keep_depth: float = 1.0

var _wanted_turn: float = 0.0
var _frames_to_look: int = 0

@onready var _hull: PipeWaterBody = $WaterHull


func _physics_process(_delta: float) -> void:
	_frames_to_look -= 1
	if thrust <= 0.0 or _frames_to_look > 0:
		return
	_frames_to_look = LOOK_EVERY
	_wanted_turn = turn_rate
	var water: PipeWater = get_tree().get_first_node_in_group(&"pipe_water") as PipeWater
	if water == null:
		return
	var bow: Vector3 = _bow()
	var port: float = water.get_depth(global_position + bow.rotated(Vector3.UP, LOOK_ANGLE)
			* LOOK_AHEAD)
	var starboard: float = water.get_depth(global_position
			+ bow.rotated(Vector3.UP, -LOOK_ANGLE) * LOOK_AHEAD)
	if minf(port, starboard) < keep_depth:
		_wanted_turn = EVASIVE_TURN if port >= starboard else -EVASIVE_TURN


func _integrate_forces(state: PhysicsDirectBodyState3D) -> void:
	if thrust <= 0.0 or _hull.displaced_volume <= 0.0:
		return
	state.apply_central_force(_bow() * thrust)
	# A yaw torque that brings the turning rate to the one wanted at rudder_response, whatever
	# the hull's moment of inertia.
	var inverse_inertia: float = state.inverse_inertia.y
	if inverse_inertia > 0.0:
		var yaw_error: float = _wanted_turn - state.angular_velocity.y
		state.apply_torque(Vector3.UP * yaw_error * rudder_response / inverse_inertia)


## The bow's horizontal direction (global).
func _bow() -> Vector3:
	var bow: Vector3 = global_basis.x
	bow.y = 0.0
	return bow.normalized() if bow.length_squared() > 1.0e-6 else Vector3.RIGHT
