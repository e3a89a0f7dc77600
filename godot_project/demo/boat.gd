extends RigidBody3D
## The demo's motor boat: a hull that floats on its PipeWaterBody and, with [member thrust],
## drives forward (+X, the bow) and turns at [member turn_rate], so it leaves a wake.
##
## The motor works only while the hull is in water (the propeller needs it); on land or in the
## air the boat is a plain rigid body. An autopilot looks ahead with [method PipeWater.get_depth]
## and turns towards deeper water before the boat runs aground, slowing down while the water
## ahead is shallow; a boat that has stopped against a bank all the same backs off it, turning
## towards the deeper side, and goes on.

## How far ahead the autopilot looks, m, and at what angle to each side, rad; and how near
## straight ahead shallow water makes it slow down, m.
const LOOK_AHEAD := 10.0
const LOOK_ANGLE := 0.5
const SLOW_AHEAD := 5.0
## Turning rate when steering clear of the shore, rad/s.
const EVASIVE_TURN := 0.8
## Share of the thrust the motor keeps while the water [constant SLOW_AHEAD] m ahead is shallow.
const SHALLOW_THROTTLE := 0.3
## A boat slower than STUCK_SPEED m/s with its motor running for STUCK_SECONDS has hit a bank:
## it backs off for BACK_OFF_SECONDS at BACK_OFF_THROTTLE of the thrust.
const STUCK_SPEED := 0.5
const STUCK_SECONDS := 1.5
const BACK_OFF_SECONDS := 2.5
const BACK_OFF_THROTTLE := -0.6
## Physics frames between two looks ahead (each is three depth queries).
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
var _throttle: float = 1.0
var _frames_to_look: int = 0
var _stuck_seconds: float = 0.0
var _back_off_seconds: float = 0.0

@onready var _hull: PipeWaterBody = $WaterHull


func _physics_process(delta: float) -> void:
	if thrust <= 0.0:
		return
	if _back_off_seconds > 0.0:
		_back_off_seconds -= delta
		if _back_off_seconds <= 0.0:
			_throttle = 1.0
			_frames_to_look = 0
		return
	if _hull.displaced_volume > 0.0 and linear_velocity.length() < STUCK_SPEED:
		_stuck_seconds += delta
	else:
		_stuck_seconds = 0.0
	_frames_to_look -= 1
	if _frames_to_look > 0:
		return
	_frames_to_look = LOOK_EVERY
	var water: PipeWater = get_tree().get_first_node_in_group(&"pipe_water") as PipeWater
	if water == null:
		return
	var bow: Vector3 = _bow()
	var port: float = water.get_depth(global_position + bow.rotated(Vector3.UP, LOOK_ANGLE)
			* LOOK_AHEAD)
	var starboard: float = water.get_depth(global_position
			+ bow.rotated(Vector3.UP, -LOOK_ANGLE) * LOOK_AHEAD)
	var ahead: float = water.get_depth(global_position + bow * SLOW_AHEAD)
	var towards_deeper: float = EVASIVE_TURN if port >= starboard else -EVASIVE_TURN
	if _stuck_seconds >= STUCK_SECONDS:
		_stuck_seconds = 0.0
		_back_off_seconds = BACK_OFF_SECONDS
		_throttle = BACK_OFF_THROTTLE
		_wanted_turn = towards_deeper
		return
	_wanted_turn = turn_rate
	_throttle = 1.0
	if minf(minf(port, starboard), ahead) < keep_depth:
		_wanted_turn = towards_deeper
	if ahead < keep_depth:
		_throttle = SHALLOW_THROTTLE


func _integrate_forces(state: PhysicsDirectBodyState3D) -> void:
	if thrust <= 0.0 or _hull.displaced_volume <= 0.0:
		return
	state.apply_central_force(_bow() * thrust * _throttle)
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
