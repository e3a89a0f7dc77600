extends Node3D
## The world demo: 8 km × 8 km of 1 m cells (8192², past the 4096² a PipeWater grid runs on
## the GPU) in a [PipeWaterWorld], made from [member world_seed]: hills falling to a
## sea held at the south edge ([constant PipeWater.BOUNDARY_LEVEL]), three rivers from springs in
## the hills, lakes where the ground dips, and a reservoir behind a dam across the middle river.
## The camera flies down that river; [kbd]B[/kbd] breaches the dam, [kbd]V[/kbd] looks at the
## breach from above the reservoir, [kbd]Space[/kbd] pauses the flight, [kbd]Tab[/kbd] shows
## the pages' figures. A boat ([code]res://demo/boat.tscn[/code], its [PipeWaterBody] hull pushing
## the world's water) floats on the reservoir where the flight starts, and drifts to the breach.
## See docs/DEMO.md.
##
## The ground is a 512² heightmap at 16 cells a pixel
## ([method PipeWaterWorld.set_terrain_from_image]); near the camera the terrain and the water
## are drawn from the world's window of textures, the rest of the terrain from the heightmap, and
## the water beyond the window from the world's far water: a texel a block of 16² cells over
## 4 km around the camera's focus ([member PipeWaterWorld.far_water_cells]), so the reservoir and
## the rivers run on to the horizon instead of stopping at the window's edge.

const SIDE := 8192
const PIXELS := 512
const CELLS_PER_PIXEL := SIDE / PIXELS
## Cells a side of the window drawn at full resolution around the point the camera looks at.
const WINDOW := 512
## Cells a side of the far water drawn around it, and cells a side of one of its texels: the
## heightmap's own 16 cells a pixel, 256² texels, enough for a camera a few hundred metres to a
## few kilometres up.
const FAR_WATER := 4096
const FAR_WATER_STRIDE := 16
## The rivers' courses across the map (pixels along x at the north edge, before their bends).
const RIVER_X := [110.0, 262.0, 404.0]
## The dam across the middle river: pixel row and half-width (pixels).
const DAM_ROW := 185.0
const DAM_HALF_WIDTH := 16.0
## Pixel rows of the valley above the dam that the reservoir fills at the start (384 m).
const RESERVOIR_ROWS := 24
## Springs at the rivers' heads, m³/s each.
const SPRING_RATE := 30.0
const SEA_LEVEL := 0.0
## The land's colours, set on the near and the far terrain's materials alike: Godot converts a
## colour set on a material from sRGB to linear but feeds an unset one's default as written, so
## a colour set on one material and left to its default on the other draws two greens.
const LAND_COLOURS := {
	"grass_colour": Color(0.20, 0.33, 0.10),
	"rock_colour": Color(0.42, 0.37, 0.31),
	"sand_colour": Color(0.62, 0.55, 0.40),
}
## Pixel row of the reservoir the boat is put on, on the river's course: in the window around
## the point the camera looks at when the flight starts.
const BOAT_ROW := 178.0

## Seed of the hills and the rivers' courses.
@export var world_seed: int = 7
## Speed of the flight, m/s.
@export var flight_speed: float = 35.0

var _noise := FastNoiseLite.new()
var _heights := PackedFloat32Array()
var _world: PipeWaterWorld
var _camera: Camera3D
var _focus: Node3D
var _near_terrain: MeshInstance3D
var _far_terrain: MeshInstance3D
var _label: Label
var _flight: float = 0.0
var _flying: bool = true
var _breached: bool = false
var _watching_breach: bool = false
var _boat: RigidBody3D


func _ready() -> void:
	_noise.seed = world_seed
	_noise.frequency = 0.012
	_noise.fractal_octaves = 4
	_build_heightmap()
	_world = PipeWaterWorld.new()
	_world.name = "World"
	_world.world_size = Vector2i(SIDE, SIDE)
	_world.cell_size = 1.0
	_world.window_cells = WINDOW
	_world.far_water_cells = FAR_WATER
	_world.far_water_stride = FAR_WATER_STRIDE
	_world.boundary_south = PipeWater.BOUNDARY_LEVEL
	_world.boundary_level_south = SEA_LEVEL
	add_child(_world)
	if not _world.is_ready():
		push_error("the world demo needs a wgpu device: %s" % _world.get_last_error())
		return
	_world.set_terrain_from_image(_heightmap_image(), 1.0, 0.0, Vector2i.ZERO, CELLS_PER_PIXEL)
	_fill_reservoir()
	for river in RIVER_X.size():
		_world.add_source(_map_point(_river_x(river, 14.0), 14.0), SPRING_RATE, 24.0)
	_focus = Node3D.new()
	_focus.name = "Focus"
	add_child(_focus)
	_world.focus_node = _world.get_path_to(_focus)
	_make_view()
	_place_camera(0.0)
	_launch_boat()


func _unhandled_input(event: InputEvent) -> void:
	var key := event as InputEventKey
	if key == null or not key.pressed or key.echo:
		return
	match key.keycode:
		KEY_B:
			breach_dam()
		KEY_V:
			view_breach()
		KEY_SPACE:
			_flying = not _flying or _watching_breach
			_watching_breach = false
		KEY_TAB:
			_label.visible = not _label.visible


func _process(delta: float) -> void:
	if _world == null or not _world.is_ready():
		return
	if _flying and not _watching_breach:
		_flight += delta
	if not _watching_breach:
		_place_camera(_flight)
	_show_window()
	if _label.visible:
		var report: Dictionary = _world.get_world_report()
		_label.text = ("%d² cells, %d pages of 56²: %d with water fields, %d wet; "
				+ "%.0f MiB on the device; far water %s texels of %d²\n"
				+ "B: breach the dam%s   Space: %s   Tab: hide") % [
				SIDE, report.get("pages", 0),
				report.get("watered", 0), report.get("wet", 0),
				report.get("device_bytes", 0) / 1048576.0, report.get("far_texels", Vector2i.ZERO),
				report.get("far_stride", 0), " (breached)" if _breached else "",
				"fly on" if not _flying else "hover"]


## Cuts a notch through the dam, as a player digging would (five overlapping cuts of 12 m, about
## 30 m deep in the middle): the reservoir runs down the valley.
func breach_dam() -> void:
	if _breached:
		return
	_breached = true
	var at: Vector3 = _map_point(_river_x(1, DAM_ROW), DAM_ROW)
	for step in 5:
		_world.modify_terrain(at + Vector3(0.0, 0.0, (step - 2) * 6.0), -12.0, 14.0)


## Holds the camera above the reservoir, looking down the valley over the dam at the breach
## and the flood below it, the world's window centred just below the dam. Space flies on.
func view_breach() -> void:
	_watching_breach = true
	var dam: Vector3 = _map_point(_river_x(1, DAM_ROW), DAM_ROW)
	dam.y = _dam_crest()
	var from_row: float = DAM_ROW - 14.0
	var from: Vector3 = _map_point(_river_x(1, from_row) + 10.0, from_row)
	from.y = _dam_crest() + 110.0
	_camera.look_at_from_position(from, dam + Vector3(0.0, -10.0, 90.0), Vector3.UP)
	_focus.global_position = dam + Vector3(0.0, 0.0, 60.0)


## Where the camera is after [param seconds] of flight: above the middle river from the
## reservoir south towards the sea, looking ahead and down.
func _place_camera(seconds: float) -> void:
	var row: float = clampf(150.0 + seconds * flight_speed / CELLS_PER_PIXEL, 150.0, 470.0)
	var ahead: float = minf(row + 30.0, 500.0)
	var look: Vector3 = _map_point(_river_x(1, ahead), ahead)
	look.y = maxf(_ground(_river_x(1, ahead), ahead), SEA_LEVEL)
	var from: Vector3 = _map_point(_river_x(1, row) + 22.0, row - 6.0)
	from.y = maxf(_ground(_river_x(1, row) + 22.0, row - 6.0), SEA_LEVEL) + 260.0
	_camera.look_at_from_position(from, look, Vector3.UP)
	_focus.global_position = look


## Puts the demo's boat on the reservoir at [constant BOAT_ROW], its waterline at the level the
## reservoir was filled to, bow down the valley. Its hull's [member PipeWaterBody.water] is
## empty: with no PipeWater in the scene it pushes the world.
func _launch_boat() -> void:
	_boat = (load("res://demo/boat.tscn") as PackedScene).instantiate()
	_boat.name = "Boat"
	var at: Vector3 = _map_point(_river_x(1, BOAT_ROW), BOAT_ROW)
	at.y = _dam_crest() - 2.0 + 0.15
	_boat.position = at
	_boat.rotation.y = -PI / 2.0
	add_child(_boat)


## The world's window into the near terrain's shader, the far terrain's hole around it.
func _show_window() -> void:
	var rect: Rect2 = _world.get_window_rect()
	if rect.size == Vector2.ZERO:
		return
	_near_terrain.position = Vector3(rect.get_center().x, 0.0, rect.get_center().y)
	var near := _near_terrain.material_override as ShaderMaterial
	near.set_shader_parameter("height_texture", _world.height_texture)
	var far := _far_terrain.material_override as ShaderMaterial
	far.set_shader_parameter("hole", Vector4(rect.position.x + 2.0, rect.position.y + 2.0,
			rect.end.x - 2.0, rect.end.y - 2.0))


func _make_view() -> void:
	_camera = Camera3D.new()
	_camera.far = 12000.0
	add_child(_camera)
	_camera.current = true
	var sun := DirectionalLight3D.new()
	sun.rotation_degrees = Vector3(-40.0, 35.0, 0.0)
	sun.shadow_enabled = true
	add_child(sun)
	var environment := Environment.new()
	environment.background_mode = Environment.BG_SKY
	environment.sky = Sky.new()
	environment.sky.sky_material = ProceduralSkyMaterial.new()
	environment.fog_enabled = true
	environment.fog_density = 0.00012
	var world_environment := WorldEnvironment.new()
	world_environment.environment = environment
	add_child(world_environment)
	_near_terrain = MeshInstance3D.new()
	var plane := PlaneMesh.new()
	plane.size = Vector2(WINDOW, WINDOW)
	plane.subdivide_width = WINDOW - 1
	plane.subdivide_depth = WINDOW - 1
	_near_terrain.mesh = plane
	var near := ShaderMaterial.new()
	near.shader = load("res://demo/terrain.gdshader")
	near.set_shader_parameter("grid_size", Vector2(WINDOW, WINDOW))
	near.set_shader_parameter("cell_size", 1.0)
	near.set_shader_parameter("low_height", SEA_LEVEL - 5.0)
	near.set_shader_parameter("high_height", 120.0)
	# The far land's colours, so that the window's edge does not show as a patch.
	for colour: String in LAND_COLOURS:
		near.set_shader_parameter(colour, LAND_COLOURS[colour])
	near.set_shader_parameter("dry_grass_colour", Color(0.24, 0.35, 0.12))
	_near_terrain.material_override = near
	_near_terrain.custom_aabb = AABB(Vector3(-WINDOW, -500.0, -WINDOW),
			Vector3(2 * WINDOW, 1000.0, 2 * WINDOW))
	add_child(_near_terrain)
	_far_terrain = MeshInstance3D.new()
	var far_plane := PlaneMesh.new()
	far_plane.size = Vector2(SIDE, SIDE)
	far_plane.subdivide_width = PIXELS - 1
	far_plane.subdivide_depth = PIXELS - 1
	_far_terrain.mesh = far_plane
	var far := ShaderMaterial.new()
	far.shader = load("res://demo/world/far_terrain.gdshader")
	far.set_shader_parameter("heights", ImageTexture.create_from_image(_heightmap_image()))
	far.set_shader_parameter("world_size", float(SIDE))
	far.set_shader_parameter("sea_level", SEA_LEVEL)
	for colour: String in LAND_COLOURS:
		far.set_shader_parameter(colour, LAND_COLOURS[colour])
	_far_terrain.material_override = far
	_far_terrain.custom_aabb = AABB(Vector3(-SIDE, -500.0, -SIDE),
			Vector3(2 * SIDE, 1000.0, 2 * SIDE))
	add_child(_far_terrain)
	var canvas := CanvasLayer.new()
	_label = Label.new()
	_label.position = Vector2(12.0, 8.0)
	canvas.add_child(_label)
	add_child(canvas)


## Fills the reservoir behind the dam to 2 m under its crest: water on every pixel of the
## valley [constant RESERVOIR_ROWS] rows above the dam whose ground lies below that, 16 × 16
## cells at a time (the water runs on up the valley until it stands level).
func _fill_reservoir() -> void:
	var crest: float = _dam_crest()
	for row in range(int(DAM_ROW) - RESERVOIR_ROWS, int(DAM_ROW)):
		var course: float = _river_x(1, row)
		for column in range(int(course - DAM_HALF_WIDTH * 2.0), int(course + DAM_HALF_WIDTH * 2.0)):
			var depth: float = crest - 2.0 - _heights[row * PIXELS + column]
			if depth > 0.0:
				_world.add_water(_map_point(column, row), depth * CELLS_PER_PIXEL * CELLS_PER_PIXEL, 11.0)


## The heightmap: hills falling south to the sea, fractal noise, three river valleys, and the dam.
func _build_heightmap() -> void:
	_heights.resize(PIXELS * PIXELS)
	var crest: float = _dam_crest()
	for row in PIXELS:
		for column in PIXELS:
			var h: float = _ground(column, row)
			var across_dam: bool = (absf(row - DAM_ROW) < 1.5
					and absf(column - _river_x(1, row)) < DAM_HALF_WIDTH)
			_heights[row * PIXELS + column] = maxf(h, crest) if across_dam else h


func _heightmap_image() -> Image:
	return Image.create_from_data(PIXELS, PIXELS, false, Image.FORMAT_RF, _heights.to_byte_array())


## The ground (m) at a pixel, before the dam.
func _ground(column: float, row: float) -> float:
	var north: float = 1.0 - row / PIXELS
	var h: float = 130.0 * pow(north, 1.5) - 12.0 + 28.0 * north * _noise.get_noise_2d(column, row)
	for river in RIVER_X.size():
		var d: float = absf(column - _river_x(river, row))
		h -= (20.0 * exp(-pow(d / 8.0, 2.0)) + 4.0 * exp(-pow(d / 2.0, 2.0))) * (0.4 + 0.6 * north)
	return h


## The crest of the dam: the ground of the valley's sides where it stands.
func _dam_crest() -> float:
	return _ground(_river_x(1, DAM_ROW) + DAM_HALF_WIDTH, DAM_ROW) - 4.0


## The pixel column of a river's course at a pixel row.
func _river_x(river: int, row: float) -> float:
	return RIVER_X[river] + 35.0 * sin(row * 0.018 + river * 2.1) + 14.0 * sin(row * 0.047 + river)


## The world's local point at the centre of a pixel.
func _map_point(column: float, row: float) -> Vector3:
	var half: float = SIDE / 2.0
	return Vector3((column + 0.5) * CELLS_PER_PIXEL - half, 0.0, (row + 0.5) * CELLS_PER_PIXEL - half)
