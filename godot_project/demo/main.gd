extends Node3D
## The PipeWater demo: a river valley with a dam of terrain, a reservoir behind it and a lake
## below, a boat on the reservoir. Dig through the dam and watch the boat ride the flood.
##
## The terrain is the landscape of [code]cargo xtask demo[/code] (see landscape.gd), generated
## from [member terrain_seed] and [member roughness], or read from [member heightmap_image].
## The water it starts with, the reservoir and the lake, is baked into the scene
## ([member PipeWater.initial_state], made with the PipeWater editor tools' Bake), and the spring
## is the PipeWaterSource node [code]PipeWater/Spring[/code]. When the landscape settings give
## other terrain than the baked water's, the water is made by script instead: the lake filled to
## its level, the reservoir with [method PipeWater.fill_basin], the spring moved to its place.
##
## Several players: run one copy with [code]-- --server[/code] (it may be headless) and others
## with [code]-- --client[=HOST][/code]; they share the server's water
## ([member PipeWater.multiplayer_sync]) over ENet on [constant PORT], and every player's tools
## are requests the server accepts. Boats are each player's own.

enum Tool { ADD_WATER, REMOVE_WATER, DIG, RAISE }
## The landscapes of landscape.gd: the river valley with its dam, or rolling hills with lakes.
enum TerrainKind { VALLEY, HILLS }

const Landscape := preload("res://demo/landscape.gd")
const TerrainMesh := preload("res://demo/terrain_mesh.gd")
const BoatScene := preload("res://demo/boat.tscn")
const CrateScene := preload("res://demo/crate.tscn")
const TOOL_NAMES: Array[String] = ["add water", "remove water", "dig", "raise terrain"]
## Where F5 saves the water and F9 loads it from.
const SAVE_PATH := "user://pipewater_demo.res"
## Rain the T key turns on, drops per m² per second.
const RAIN_RATE := 40.0
## How far (m) the baked water's terrain may lie from the generated landscape and still be
## taken for it: the same landscape, whichever build's floating-point functions generated it.
const BAKED_TERRAIN_TOLERANCE := 1.0e-3
## The first boat's motor: about 3 m/s on the reservoir, turning slowly.
const MOTOR_THRUST := 12000.0
const MOTOR_TURN_RATE := 0.2
## UDP port of [code]--server[/code] and [code]--client[/code].
const PORT := 24565

@export_group("Terrain")
## Which landscape [member terrain_seed] generates.
@export var terrain_kind: TerrainKind = TerrainKind.VALLEY
## Seed of the diamond-square hills.
@export var terrain_seed: int = 7
## Roughness of the hills, 0..1.
@export_range(0.0, 1.0, 0.01) var roughness: float = 0.55
## Height span of the terrain, m.
@export_range(1.0, 200.0, 0.1, "suffix:m") var relief: float = 20.0
## A heightmap image (red channel 0..1 × relief) to use instead of the generated landscape. The
## river's spring and the dam's position then follow the generated layout.
@export var heightmap_image: Texture2D
@export_group("Grid")
## Cells along X and Z.
@export var grid_size := Vector2i(256, 256)
## Side of a cell, m.
@export_range(0.1, 10.0, 0.01, "suffix:m") var cell_size: float = 1.0
@export_group("Tools")
## Water added or removed per second while the button is held, m³/s.
@export var water_rate: float = 60.0
## Terrain raised or dug per second at the centre of the brush, m/s.
@export var dig_rate: float = 4.0
## Radius of the brush, m.
@export var brush_radius: float = 5.0

var landscape := Landscape.new()
var current_tool: Tool = Tool.ADD_WATER
## Whether the water started from the scene's baked water (else it was made by script).
var baked_water: bool = false
## What the last save or load did, for the panel.
var save_message: String = "F5: save water   F9: load it"
## "server", "client" or "" (a single player), from the command line's user arguments.
var network_role: String = ""

var _collision_dirty: bool = false
var _collision_timer: float = 0.0
## The Z key's view of the sleeping tiles: one square per tile, white where it was stepped.
var _awake_view := TextureRect.new()

@onready var water: PipeWater = $PipeWater
@onready var spring: PipeWaterSource = $PipeWater/Spring
@onready var terrain_mesh: TerrainMesh = $Terrain
@onready var terrain_shape: CollisionShape3D = $Ground/Shape
@onready var camera: Camera3D = $Camera
@onready var panel: Label = $Hud/Panel/Text
@onready var boats: Node3D = $Boats


func _ready() -> void:
	# In the HUD from the start, hidden: a TextureRect that no tree owns is never freed, and Godot
	# reports it (a CanvasItem RID and an ObjectDB instance) as leaked at exit.
	_awake_view.visible = false
	_awake_view.texture_filter = CanvasItem.TEXTURE_FILTER_NEAREST
	_awake_view.expand_mode = TextureRect.EXPAND_IGNORE_SIZE
	_awake_view.stretch_mode = TextureRect.STRETCH_KEEP_ASPECT
	_awake_view.set_anchors_and_offsets_preset(Control.PRESET_TOP_RIGHT)
	_awake_view.custom_minimum_size = Vector2(256, 256)
	_awake_view.position = Vector2(get_viewport().get_visible_rect().size.x - 268.0, 12.0)
	$Hud.add_child(_awake_view)
	if terrain_kind == TerrainKind.HILLS:
		landscape.generate_hills(grid_size, cell_size, terrain_seed, roughness, relief)
	else:
		landscape.generate(grid_size, cell_size, terrain_seed, roughness, relief)
	baked_water = _baked_water_fits()
	if not baked_water:
		_make_water()
	terrain_mesh.relief = relief
	terrain_mesh.fit()
	_update_collision()
	var dam: Vector2 = landscape.dam_position
	camera.set("target", to_world(dam) + Vector3(0.0, landscape.dam_crest, 0.0))
	drop_boat(to_world(landscape.boat_start), MOTOR_THRUST, MOTOR_TURN_RATE)
	_start_network(OS.get_cmdline_user_args())


## [code]--server[/code]: serve the water on [constant PORT]; [code]--client[=HOST][/code]: show
## the water of the server at HOST (127.0.0.1 when not given). Any other arguments: one player.
func _start_network(args: PackedStringArray) -> void:
	var peer := ENetMultiplayerPeer.new()
	for arg in args:
		if arg == "--server":
			network_role = "server"
			if peer.create_server(PORT, 32) != OK:
				push_error("demo: --server: cannot listen on UDP port %d" % PORT)
				return
		elif arg == "--client" or arg.begins_with("--client="):
			network_role = "client"
			var host := arg.trim_prefix("--client").trim_prefix("=")
			if peer.create_client(host if host != "" else "127.0.0.1", PORT) != OK:
				push_error("demo: --client: cannot connect to %s:%d" % [host, PORT])
				return
	if network_role == "":
		return
	multiplayer.multiplayer_peer = peer
	water.allow_client_edits = true
	water.multiplayer_sync = true


func _notification(what: int) -> void:
	if what == NOTIFICATION_PREDELETE and is_instance_valid(terrain_mesh):
		# Detach the terrain's mesh and material while its render instance exists, so that no
		# renderer update meets an instance whose mesh is already gone.
		terrain_mesh.material_override = null
		terrain_mesh.mesh = null


## Global position of a local grid point (x, z) at height 0.
func to_world(local_xz: Vector2) -> Vector3:
	return water.global_transform * Vector3(local_xz.x, 0.0, local_xz.y)


## Whether the scene's baked water was made for this landscape: its grid, and its terrain within
## [constant BAKED_TERRAIN_TOLERANCE] of every height.
func _baked_water_fits() -> bool:
	var baked: PipeWaterState = water.initial_state
	if baked == null or baked.grid_size != grid_size or heightmap_image != null \
			or not is_equal_approx(water.cell_size, cell_size):
		return false
	var terrain: PackedFloat32Array = water.get_terrain_region(Rect2i(Vector2i.ZERO, grid_size))
	if terrain.size() != landscape.heights.size():
		return false
	for i in terrain.size():
		if absf(terrain[i] - landscape.heights[i]) > BAKED_TERRAIN_TOLERANCE:
			return false
	return true


## The water of a landscape the baked water was not made for: the lake filled to its level, the
## reservoir poured behind the dam, the spring at the head of the valley.
func _make_water() -> void:
	water.initial_state = null
	water.grid_size = grid_size
	water.cell_size = cell_size
	water.initial_water_level = landscape.lake_level
	water.boundary_east = PipeWater.BOUNDARY_OPEN
	if heightmap_image != null and heightmap_image.get_image() != null:
		water.set_terrain_from_image(heightmap_image.get_image(), relief, 0.0)
	else:
		water.terrain_heights = landscape.heights
	water.rebuild()
	_fill_reservoir()
	var here: Vector3 = to_world(landscape.source_position)
	here.y = water.get_terrain_height(here)
	spring.global_position = here
	spring.rate = landscape.source_rate
	spring.radius = landscape.source_radius


## Fills the basin behind the dam up to the reservoir's level, as if poured from upstream.
func _fill_reservoir() -> void:
	var start: Vector2 = landscape.reservoir_start
	water.fill_basin(water.global_transform * Vector3(start.x, landscape.reservoir_level, start.y))


## Ground collision for the boats: a height map shape with one vertex per cell centre.
func _update_collision() -> void:
	var shape := terrain_shape.shape as HeightMapShape3D
	if shape == null:
		shape = HeightMapShape3D.new()
		terrain_shape.shape = shape
	shape.map_width = grid_size.x
	shape.map_depth = grid_size.y
	shape.map_data = water.get_terrain_region(Rect2i(Vector2i.ZERO, grid_size))
	terrain_shape.transform = water.transform.scaled_local(Vector3(cell_size, 1.0, cell_size))
	_collision_dirty = false


## Drops a boat just above the water (or ground) at a global position, its bow towards
## [param heading] (rad about Y). With [param thrust] (N) its motor runs and it turns at
## [param turn_rate] (rad/s), leaving a wake.
func drop_boat(at: Vector3, thrust: float = 0.0, turn_rate: float = 0.0,
		heading: float = randf() * TAU) -> RigidBody3D:
	var boat: RigidBody3D = BoatScene.instantiate()
	boat.position = _above_surface(at, 1.0)
	boat.rotation.y = heading
	boat.set("thrust", thrust)
	boat.set("turn_rate", turn_rate)
	boats.add_child(boat)
	return boat


## Drops a 1.5 t crate from 8 m above the water at a global position: it splashes, rings spread
## and it floats with 1.5 m³ under water (its PipeWaterBody hull).
func drop_crate(at: Vector3) -> RigidBody3D:
	var crate: RigidBody3D = CrateScene.instantiate()
	crate.position = _above_surface(at, 8.0)
	boats.add_child(crate)
	return crate


## The point [param height] m above the water (or ground) under a global position; above 0
## off the grid.
func _above_surface(at: Vector3, height: float) -> Vector3:
	var surface: float = water.get_height(at)
	if is_inf(surface):
		surface = 0.0
	return Vector3(at.x, surface + height, at.z)


## Restores the landscape, the reservoir and one boat.
func reset_demo() -> void:
	water.reset()
	if not baked_water:
		_fill_reservoir()
	for boat in boats.get_children():
		boat.queue_free()
	drop_boat(to_world(landscape.boat_start), MOTOR_THRUST, MOTOR_TURN_RATE)
	_update_collision()


func _unhandled_input(event: InputEvent) -> void:
	var key := event as InputEventKey
	if key == null or not key.pressed or key.echo:
		return
	match key.physical_keycode:
		KEY_1:
			current_tool = Tool.ADD_WATER
		KEY_2:
			current_tool = Tool.REMOVE_WATER
		KEY_3:
			current_tool = Tool.DIG
		KEY_4:
			current_tool = Tool.RAISE
		KEY_B:
			var hit: Variant = pick()
			if hit != null:
				drop_boat(hit)
		KEY_C:
			var hit: Variant = pick()
			if hit != null:
				drop_crate(hit)
		KEY_R:
			reset_demo()
		KEY_T:
			water.rain_rate = 0.0 if water.rain_rate > 0.0 else RAIN_RATE
		KEY_Z:
			_awake_view.visible = not _awake_view.visible
		KEY_P, KEY_SPACE:
			water.paused = not water.paused
		KEY_H, KEY_F1:
			$Hud/Panel.visible = not $Hud/Panel.visible
		KEY_F5:
			save_water()
		KEY_F9:
			load_water()


## Saves the water (depths, flow, terrain as dug, sources, ledger) to [constant SAVE_PATH].
func save_water() -> void:
	var state: PipeWaterState = water.save_state()
	if state == null or ResourceSaver.save(state, SAVE_PATH) != OK:
		save_message = "F5: could not save to %s" % SAVE_PATH
		return
	save_message = "F5: saved %.1f s of water to %s" % [state.simulated_time, SAVE_PATH]


## Loads the water saved by [method save_water]; the boats stay where they are.
func load_water() -> void:
	if not ResourceLoader.exists(SAVE_PATH):
		save_message = "F9: nothing saved yet (press F5)"
		return
	var state := ResourceLoader.load(SAVE_PATH, "", ResourceLoader.CACHE_MODE_IGNORE) as PipeWaterState
	if state == null or not water.load_state(state):
		save_message = "F9: could not load %s: %s" % [SAVE_PATH, water.get_last_error()]
		return
	_collision_dirty = true
	save_message = "F9: loaded the water saved at %.1f s" % state.simulated_time


func _process(delta: float) -> void:
	if Input.is_mouse_button_pressed(MOUSE_BUTTON_LEFT):
		var hit: Variant = pick()
		if hit != null:
			apply_tool(hit, delta)
	_collision_timer += delta
	if _collision_dirty and _collision_timer > 0.25:
		_collision_timer = 0.0
		_update_collision()
	_update_panel()
	_update_awake_view()


## Shows which tiles the water stepped in the last step, in the top-right corner.
func _update_awake_view() -> void:
	if not _awake_view.visible:
		return
	var tiles: Image = water.get_awake_tiles()
	if tiles == null:
		_awake_view.texture = null
		return
	var texture := _awake_view.texture as ImageTexture
	if texture == null or texture.get_size() != Vector2(tiles.get_size()):
		_awake_view.texture = ImageTexture.create_from_image(tiles)
	else:
		texture.update(tiles)


## Applies the current tool at a global position for delta seconds.
func apply_tool(at: Vector3, delta: float) -> void:
	match current_tool:
		Tool.ADD_WATER:
			water.add_water(at, water_rate * delta, brush_radius)
		Tool.REMOVE_WATER:
			water.remove_water(at, water_rate * delta, brush_radius)
		Tool.DIG:
			water.modify_terrain(at, -dig_rate * delta, brush_radius)
			_collision_dirty = true
		Tool.RAISE:
			water.modify_terrain(at, dig_rate * delta, brush_radius)
			_collision_dirty = true


## The global point under the mouse on the water surface or the ground, or null: steps along the
## camera ray until it passes below the surface, then bisects.
func pick() -> Variant:
	var mouse: Vector2 = get_viewport().get_mouse_position()
	var origin: Vector3 = camera.project_ray_origin(mouse)
	var direction: Vector3 = camera.project_ray_normal(mouse)
	var top: float = water.global_position.y + 2.0 * relief
	var travelled: float = 0.0
	if origin.y > top and direction.y < 0.0:
		travelled = (origin.y - top) / -direction.y
	var step: float = 2.0 * cell_size
	var previous: float = travelled
	while travelled < 3000.0:
		var point: Vector3 = origin + direction * travelled
		var surface: float = water.get_height(point)
		if not is_inf(surface) and point.y <= surface:
			var lo: float = previous
			var hi: float = travelled
			for i in 8:
				var mid: float = 0.5 * (lo + hi)
				var p: Vector3 = origin + direction * mid
				var h: float = water.get_height(p)
				if not is_inf(h) and p.y <= h:
					hi = mid
				else:
					lo = mid
			var hit: Vector3 = origin + direction * hi
			return Vector3(hit.x, water.get_height(hit), hit.z)
		previous = travelled
		travelled += step
	return null


## What sleeping saved in the last frame, for the panel.
func _sleep_line(stats: Dictionary) -> String:
	if not water.can_sleep:
		return "Sleeping off: every cell stepped   Z: show tiles"
	if not stats.has("tiles"):
		return "Sleeping: not on this backend"
	var cells: float = grid_size.x * grid_size.y * maxi(stats.get("substeps", 0), 1)
	return "Sleeping: %d of %d tiles awake, %.0f %% of cells stepped   Z: %s tiles" % [
			stats.get("awake_tiles", 0), stats.get("tiles", 0),
			100.0 * stats.get("cells_stepped", 0) / cells,
			"hide" if _awake_view.visible else "show"]


## The panel's line about the shared water.
func _network_line(sync: Dictionary) -> String:
	var seconds: float = maxf(sync.get("seconds", 0.0), 0.001)
	if sync.get("role") == "server":
		return "Server on port %d: %d clients, %.0f kbit/s sent" % [PORT, sync.get("clients", {}).size(),
				sync.get("bytes_sent", 0) * 8.0 / 1000.0 / seconds]
	if sync.get("role") == "client":
		return "Client of the server's water: %s, %.0f kbit/s received, %.3f m from its copy" % [
				"joined in %.2f s" % sync["join_seconds"] if sync.get("complete", false) else "joining",
				sync.get("bytes_received", 0) * 8.0 / 1000.0 / seconds, sync.get("largest_difference", 0.0)]
	return "Waiting for the server (%s)" % sync.get("role", "")


func _update_panel() -> void:
	var stats: Dictionary = water.get_frame_stats()
	var step_ms: float = stats.get("step_usec", 0) / 1000.0
	var texture_ms: float = stats.get("texture_usec", 0) / 1000.0
	var backend: String = "GPU" if water.active_backend == PipeWater.BACKEND_GPU else "CPU"
	var lines := PackedStringArray([
		"PipeWater demo%s" % ("   [PAUSED]" if water.paused else ""),
		"",
		"Left mouse: %s   (1 add water, 2 remove, 3 dig, 4 raise)" % TOOL_NAMES[current_tool],
		"Right mouse drag: orbit   wheel: zoom   W A S D Q E: move",
		"B: drop a boat   C: drop a crate   T: rain %s   R: reset   P / Space: pause   H: hide panel"
				% ("off" if water.rain_rate > 0.0 else "on"),
		save_message,
		"",
		"FPS %d" % Engine.get_frames_per_second(),
		"Simulation %.2f ms + textures %.2f ms per frame (%d substeps)" % [step_ms, texture_ms,
				stats.get("substeps", 0)],
		"Grid %d × %d cells of %.2f m" % [grid_size.x, grid_size.y, cell_size],
		"Backend %s: %s" % [backend, water.get_backend_description()],
		"Detail waves %s: %d² cells of %.2f m around the camera" % [
				"on" if water.detail_waves else "off", water.detail_window,
				cell_size / water.detail_subdivision],
		"Total water %.1f m³   boats %d" % [water.get_total_water(), boats.get_child_count()],
		_sleep_line(stats),
	])
	if network_role != "":
		lines.append(_network_line(water.get_sync_stats()))
	panel.text = "\n".join(lines)
