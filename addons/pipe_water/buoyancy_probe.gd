@icon("res://addons/pipe_water/icons/buoyancy_probe.svg")
class_name BuoyancyProbe
extends Node3D
## Makes the RigidBody3D it belongs to float on a [PipeWater].
##
## Add one or more probes as children (or deeper descendants) of any [RigidBody3D] and spread
## them over its hull: four near the corners of a boat is a good start. Each physics frame every
## probe samples [method PipeWater.get_height] and [method PipeWater.get_depth] at its global
## position and applies, at that position:
## [br]- [b]buoyancy[/b]: [code]fluid_density × gravity × volume × submersion[/code], upward.
## The probe stands for a vertical slab [code]2 × radius[/code] tall centred on it;
## [code]submersion[/code] (0..1) is the part of that slab between the terrain and the water
## surface;
## [br]- [b]drag[/b]: [code]drag × share of mass × submersion × (flow − velocity of the body at
## the probe)[/code], which damps bobbing and makes the body drift toward
## [method PipeWater.get_flow_velocity].
## [br]Outside the grid and over dry cells a probe does nothing, so the body falls.
## [br][br]A body of mass [code]m[/code] carried by probes of total volume [code]V[/code] floats
## with its probes [code]m / (fluid_density × V)[/code] submerged; above 1 it sinks.

## The water to float on. Empty: the first node of the group [code]pipe_water[/code], which every
## [PipeWater] joins when it enters the tree.
@export var water: PipeWater
## Displaced volume of this probe when fully submerged, m³.
@export_range(0.0, 10.0, 0.001, "or_greater", "suffix:m³") var volume: float = 0.25
## Half the height of the slab the probe stands for, m. Larger values ride waves more softly.
@export_range(0.01, 5.0, 0.01, "or_greater", "suffix:m") var radius: float = 0.5
## Density of the water, kg/m³.
@export_range(1.0, 2000.0, 1.0, "or_greater", "suffix:kg/m³") var fluid_density: float = 1000.0
## Drag toward the water's velocity per second, as a fraction of this probe's share of the mass
## (share = mass / number of probes on the body). 0 disables drag and drift.
@export_range(0.0, 20.0, 0.01, "or_greater", "suffix:1/s") var drag: float = 4.0
## When false the probe applies no force.
@export var enabled: bool = true
## When true the probe reads the surface with [PipeWater]'s detail waves on it
## ([code]get_height(position, true)[/code]), so the body bobs in ripples and wakes finer than the
## grid. Off by default: the detail waves are for looks first, and a probe on a hull that makes
## waves would also ride its own.
@export var ride_detail_waves: bool = false

## Part of the probe's slab under water in the last physics frame, 0..1. Read-only.
var submersion: float = 0.0
## Global Y of the water surface at the probe in the last physics frame, or -INF off the grid.
var surface_height: float = -INF

var _body: RigidBody3D
var _probe_count: int = 1


func _ready() -> void:
	_body = _find_body()
	if _body == null:
		push_warning("BuoyancyProbe %s: no RigidBody3D ancestor, the probe does nothing" % name)
		return
	_probe_count = maxi(1, _count_probes(_body))


func _physics_process(_delta: float) -> void:
	submersion = 0.0
	if water == null or not is_instance_valid(water):
		water = get_tree().get_first_node_in_group("pipe_water") as PipeWater
	if not enabled or _body == null or water == null:
		return
	var pos: Vector3 = global_position
	surface_height = water.get_height(pos, ride_detail_waves)
	if is_inf(surface_height) or is_nan(surface_height):
		return
	var depth: float = water.get_depth(pos)
	if depth <= 0.0:
		return
	var bed: float = surface_height - depth
	var top: float = minf(pos.y + radius, surface_height)
	var bottom: float = maxf(pos.y - radius, bed)
	submersion = clampf((top - bottom) / (2.0 * radius), 0.0, 1.0)
	if submersion <= 0.0:
		return
	var offset: Vector3 = pos - _body.global_position
	var gravity: float = _gravity()
	var lift: Vector3 = Vector3.UP * fluid_density * gravity * volume * submersion
	var point_velocity: Vector3 = _body.linear_velocity + _body.angular_velocity.cross(offset)
	var flow: Vector3 = water.get_flow_velocity(pos)
	var share: float = _body.mass / float(_probe_count)
	var pull: Vector3 = (flow - point_velocity) * drag * share * submersion
	_body.apply_force(lift + pull, offset)


## Number of enabled probes on [param body], counted when the probe enters the tree.
func get_probe_count() -> int:
	return _probe_count


func _gravity() -> float:
	var g: float = ProjectSettings.get_setting("physics/3d/default_gravity", 9.8)
	return g * _body.gravity_scale


func _find_body() -> RigidBody3D:
	var node: Node = get_parent()
	while node != null:
		if node is RigidBody3D:
			return node as RigidBody3D
		node = node.get_parent()
	return null


func _count_probes(node: Node) -> int:
	var count: int = 0
	for child in node.get_children():
		if child is BuoyancyProbe:
			count += 1
		count += _count_probes(child)
	return count
