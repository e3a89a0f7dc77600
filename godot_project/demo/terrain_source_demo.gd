extends Node3D
## A PipeWater whose ground is a HeightMapShape3D (no terrain addon needed): the water is fitted
## to the shape (one cell a vertex), and every few seconds the script digs a notch into the
## shape's dam; the water follows the dug rectangle live. See docs/TERRAIN_SOURCES.md.

## Vertices on the shape's side.
const SIDE := 129
## Seconds between notches.
const DIG_EVERY := 4.0

var _shape: HeightMapShape3D
var _heights := PackedFloat32Array()
var _notch := 0
var _clock := 0.0

@onready var _water: PipeWater = $Water
@onready var _holder: CollisionShape3D = $Ground/Shape


func _ready() -> void:
	_shape = HeightMapShape3D.new()
	_shape.map_width = SIDE
	_shape.map_depth = SIDE
	_heights.resize(SIDE * SIDE)
	for v in SIDE:
		for u in SIDE:
			_heights[v * SIDE + u] = _ground(u, v)
	_shape.map_data = _heights
	_holder.shape = _shape
	_water.terrain_source = _water.get_path_to(_holder)
	_water.fit_to_terrain_source(1)
	_water.fill_basin(_holder.to_global(Vector3(-30.0, 3.8, 0.0)))
	_water.add_source(_holder.to_global(Vector3(-55.0, 0.0, 0.0)), 2.0, 3.0)
	$TerrainMesh.fit()
	$Camera.look_at(Vector3.ZERO)
	$Sun.rotation_degrees = Vector3(-50.0, 30.0, 0.0)


## A valley running along +X with a dam across it at u = 80.
func _ground(u: int, v: int) -> float:
	var across := (v - SIDE / 2.0) / (SIDE / 2.0)
	var valley := 12.0 * across * across - 0.04 * u
	var dam := 8.0 * exp(-pow((u - 80) / 3.0, 2.0))
	return valley + dam + 0.6 * sin(u * 0.3) * cos(v * 0.23)


func _physics_process(delta: float) -> void:
	_clock += delta
	if _clock < DIG_EVERY or _notch >= 6:
		return
	_clock = 0.0
	_notch += 1
	# Lower the dam's crest around the valley floor by 1.5 m more each time.
	for v in range(SIDE / 2 - 4, SIDE / 2 + 5):
		for u in range(76, 85):
			_heights[v * SIDE + u] -= 1.5 * exp(-pow((u - 80) / 3.0, 2.0))
	_shape.map_data = _heights
