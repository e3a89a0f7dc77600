@tool
extends MeshInstance3D
## The demo's ground: a plane with a vertex per cell that terrain.gdshader lifts to the terrain
## heights in [member water]'s [member PipeWater.height_texture]. So it shows the terrain the
## water runs on wherever the water runs: digging in the game, and in the editor the terrain of
## the baked water and what the PipeWater tools raise, lower and smooth.

## The water whose terrain it shows.
@export var water: PipeWater
## Height span of the terrain's colours, m: sand at -0.2 × relief, rock at relief.
@export_range(1.0, 200.0, 0.1, "suffix:m") var relief: float = 20.0


func _ready() -> void:
	if water == null or Engine.is_editor_hint() and not _shown_in_editor():
		return
	water.simulation_rebuilt.connect(_on_water_rebuilt)
	fit()


## Sizes the plane to the water's grid and hands the shader the water's height texture.
func fit() -> void:
	if water == null:
		return
	var cells: Vector2i = water.grid_size
	var cell_size: float = water.cell_size
	var plane := PlaneMesh.new()
	plane.size = Vector2(cells) * cell_size
	plane.subdivide_width = mini(cells.x - 1, 1023)
	plane.subdivide_depth = mini(cells.y - 1, 1023)
	mesh = plane
	transform = water.transform
	var shader_material := material_override as ShaderMaterial
	if shader_material != null:
		shader_material.set_shader_parameter("height_texture", water.height_texture)
		shader_material.set_shader_parameter("grid_size", Vector2(cells))
		shader_material.set_shader_parameter("cell_size", cell_size)
		shader_material.set_shader_parameter("low_height", -0.2 * relief)
		shader_material.set_shader_parameter("high_height", relief)
	# The shader moves vertices up and down; keep the mesh from being culled.
	var extent := Vector2(cells) * cell_size
	custom_aabb = AABB(Vector3(-extent.x / 2.0, -10.0 * relief, -extent.y / 2.0),
			Vector3(extent.x, 20.0 * relief, extent.y))


## Whether the editor draws this node: it is part of the scene being edited (not a copy made for
## a preview) and the editor has a window (a headless editor's renderer keeps no meshes).
func _shown_in_editor() -> bool:
	return get_tree().edited_scene_root == owner and DisplayServer.get_name() != "headless"


func _on_water_rebuilt(_active_backend: int) -> void:
	fit()
