extends "res://tests/test_base.gd"
## Tests of the addon's water surface shader (addons/pipe_water/water_surface.gdshader) in the
## renderer Godot was started with.
##
## Needs a window (a renderer that draws), e.g. under Xvfb with Mesa's software drivers:
## [codeblock]
## xvfb-run -a $GODOT --rendering-method forward_plus --rendering-driver vulkan \
##     --path godot_project -s res://tests/test_water_shader.gd -- --renderer=forward_plus
## xvfb-run -a $GODOT --rendering-method mobile --rendering-driver vulkan ... --renderer=mobile
## xvfb-run -a $GODOT --rendering-method gl_compatibility --rendering-driver opengl3 ... \
##     --renderer=gl_compatibility
## [/codeblock]
## It loads the shader, checks that it compiled (its parameters are listed), that every
## parameter a user tunes sits in a group with a range, and that it declares no uniform,
## varying, function or local it does not use (what the shader editor warns about), then draws
## a PipeWater node with a river running into a pool and checks the water changed the picture,
## a 1024² lake drawn by the clipmap, checked for holes between its rings, and a
## PipeWaterWorld lake whose far water must be drawn in the window's colours.
## Shader compile errors and warnings show in Godot's output, which cargo xtask scans. Headless
## (nothing is drawn) it prints one SKIP line. Ends with PIPEWATER TESTS PASSED or PIPEWATER
## TESTS FAILED.

const SHADER_PATH := "res://addons/pipe_water/water_surface.gdshader"
## Parameters the node sets, not meant for tuning.
const NODE_PARAMETERS: Array[String] = [
	"height_texture", "flux_texture", "grid_size", "cell_size", "triangular_lattice", "clipmap_snap",
	"clipmap_spacing", "clipmap_quads", "clipmap_levels", "detail_texture", "detail_on",
	"detail_period", "detail_offset", "detail_rect", "hole", "far_height_texture", "far_flux_texture",
	"far_rect", "far_blend",
]
## The groups the tunable parameters belong to.
const GROUPS: Array[String] = ["water_body", "detail", "detail_waves", "foam", "cut_off"]
## Grid of the scene drawn: cells per side, m per cell.
const CELLS := 64
const CELL := 1.0
## Frames drawn before the picture is taken (the river starts running).
const FRAMES := 40
## Least share of the picture the water must change.
const MIN_CHANGED := 0.03
## Change of a pixel (R + G + B, 0..3) that counts as the water having changed it.
const PIXEL_CHANGE := 0.03
## The large grid that the node draws with a clipmap: cells per side, m per cell.
const LARGE_CELLS := 1024
const LARGE_CELL := 0.25
## A drawn edge of the water lies within this of where the lattice puts it (m, with 1 m cells: a
## few pixels, and the shore's fade over its last 0.12 m of depth).
const LATTICE_EDGE_TOLERANCE := 0.15
## The PipeWaterWorld of the far water test: cells per side (1 m), its window's cells.
const WORLD_CELLS := 256
const WORLD_WINDOW := 64
## Parameters a PipeWaterWorld's far mesh sets itself; every other one its material must hold as
## the node's material does.
const FAR_OWN_PARAMETERS: Array[String] = [
	"height_texture", "flux_texture", "grid_size", "cell_size", "clipmap_levels", "clipmap_snap",
	"hole", "detail_texture", "detail_on", "detail_period", "detail_offset", "detail_rect",
	"far_height_texture", "far_flux_texture", "far_rect", "far_blend",
]
## Largest difference of a channel (0..1) between the median colours of the still lake just
## inside and just outside the window's edge (drawn from 1 m cells and from 16 m texels): 2.5 of
## 255. Drawn with the same parameters they were at most 1 of 255 apart on Godot 4.3 (Forward+
## and Compatibility, lavapipe); with every default set on the far material, 0.18.
const SEAM_TOLERANCE := 0.01


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	var renderer: String = _argument("renderer", "")
	print("PipeWater water shader tests, Godot %s, renderer %s, adapter %s" % [
		Engine.get_version_info().string, renderer, RenderingServer.get_video_adapter_name()])
	if DisplayServer.get_name() == "headless":
		print("SKIP: water shader tests (headless: nothing is drawn; run in a window, e.g. under "
				+ "xvfb-run, with --rendering-method and --rendering-driver)")
		print("PIPEWATER TESTS PASSED")
		quit(0)
		return
	if renderer != "":
		var has_device: bool = RenderingServer.get_rendering_device() != null
		_check(has_device == (renderer != "gl_compatibility"),
				"the renderer is %s (a RenderingDevice: %s)" % [renderer, has_device])
	_test_the_shader_compiles_and_its_parameters_are_grouped_with_ranges()
	_test_the_shader_declares_nothing_it_does_not_use()
	await _test_the_node_draws_water_with_it()
	await _test_a_large_grid_draws_a_clipmap_that_covers_it()
	await _test_a_large_grid_draws_a_clipmap_that_covers_it(true)
	await _test_water_on_the_triangular_lattice_is_drawn_where_its_cells_lie()
	await _test_the_far_water_of_a_world_is_drawn_in_the_colours_of_its_window()
	_finish()


## The value of a user argument `--name=value` (after `--`), or [param fallback].
func _argument(name: String, fallback: String) -> String:
	for argument in OS.get_cmdline_user_args():
		if argument.begins_with("--%s=" % name):
			return argument.get_slice("=", 1)
	return fallback


func _test_the_shader_compiles_and_its_parameters_are_grouped_with_ranges() -> void:
	var shader := load(SHADER_PATH) as Shader
	_check(shader != null and shader.code.length() > 0, "%s loads as a Shader" % SHADER_PATH)
	if shader == null:
		return
	var listed: Array = shader.get_shader_uniform_list(true)
	var group: String = ""
	var names: Array[String] = []
	var ungrouped: Array[String] = []
	var without_range: Array[String] = []
	var groups_seen: Array[String] = []
	for entry: Dictionary in listed:
		if entry["usage"] & PROPERTY_USAGE_GROUP:
			group = entry["name"]
			if group != "" and not groups_seen.has(group):
				groups_seen.append(group)
			continue
		var name: String = entry["name"]
		names.append(name)
		if NODE_PARAMETERS.has(name):
			continue
		if group == "":
			ungrouped.append(name)
		var numeric: bool = entry["type"] == TYPE_FLOAT or entry["type"] == TYPE_INT
		if numeric and entry["hint"] != PROPERTY_HINT_RANGE:
			without_range.append(name)
	# A shader that failed to compile lists no parameters.
	_check(names.size() >= NODE_PARAMETERS.size() + 20,
			"the shader compiled: it lists %d parameters (%s)" % [names.size(), ", ".join(names)])
	var missing: Array[String] = []
	for name in NODE_PARAMETERS:
		if not names.has(name):
			missing.append(name)
	_check(missing.is_empty(), "it has the parameters the node sets (missing: %s)" % [missing])
	_check(ungrouped.is_empty(), "every tunable parameter is in a group (not: %s)" % [ungrouped])
	_check(groups_seen == GROUPS, "its groups are %s (got %s)" % [GROUPS, groups_seen])
	_check(without_range.is_empty(), "every tunable number has a range hint (not: %s)"
			% [without_range])


## Godot reports unused uniforms, varyings, functions and locals only in the shader editor; the
## same warnings, from the source: every name declared is used somewhere else.
func _test_the_shader_declares_nothing_it_does_not_use() -> void:
	var shader := load(SHADER_PATH) as Shader
	if shader == null:
		return
	# Comments do not count as uses.
	var code: String = RegEx.create_from_string("//[^\\n]*").sub(shader.code, "", true)
	var declaration := RegEx.create_from_string(
			"(?m)(?:^uniform\\s+\\w+\\s+(\\w+)|^varying\\s+\\w+\\s+(\\w+)|^\\w+\\s+(\\w+)\\s*\\("
			+ "|\\b(?:float|int|bool|vec[234]|mat[234])\\s+(\\w+)\\s*=)")
	var word := RegEx.create_from_string("\\b\\w+\\b")
	var uses := {}
	for found in word.search_all(code):
		uses[found.get_string()] = uses.get(found.get_string(), 0) + 1
	var names: Array[String] = []
	for found in declaration.search_all(code):
		for group in range(1, 5):
			var name: String = found.get_string(group)
			if name != "" and name not in ["vertex", "fragment", "light"] and not names.has(name):
				names.append(name)
	var unused: Array[String] = []
	for name in names:
		if uses.get(name, 0) < 2:
			unused.append(name)
	_check(names.size() > 40 and unused.is_empty(),
			"all %d names the shader declares are used (unused: %s)" % [names.size(), unused])


func _test_the_node_draws_water_with_it() -> void:
	var scene := Node3D.new()
	root.add_child(scene)
	var environment := Environment.new()
	environment.background_mode = Environment.BG_SKY
	environment.sky = Sky.new()
	environment.sky.sky_material = ProceduralSkyMaterial.new()
	var world := WorldEnvironment.new()
	world.environment = environment
	scene.add_child(world)
	var sun := DirectionalLight3D.new()
	sun.rotation = Vector3(-0.9, 0.6, 0.0)
	scene.add_child(sun)
	var ground := _ground()
	scene.add_child(ground)
	var water := PipeWater.new()
	water.grid_size = Vector2i(CELLS, CELLS)
	water.cell_size = CELL
	water.terrain_heights = _terrain()
	water.initial_water_level = 2.5
	scene.add_child(water)
	water.add_source(Vector3(-0.4 * CELLS * CELL, 0.0, 0.0), 6.0, 3.0)
	var camera := Camera3D.new()
	scene.add_child(camera)
	camera.look_at_from_position(Vector3(0.0, 0.55 * CELLS * CELL, 0.55 * CELLS * CELL),
			Vector3(0.15 * CELLS * CELL, 0.0, 0.0))
	camera.make_current()
	var material := ground.material_override as ShaderMaterial
	material.set_shader_parameter("height_texture", water.height_texture)
	for i in FRAMES:
		await process_frame
	var surface: MeshInstance3D = _surface_of(water)
	var shader_material := surface.material_override as ShaderMaterial if surface else null
	var shader_path: String = shader_material.shader.resource_path if shader_material else ""
	_check(shader_path == SHADER_PATH, "the node draws its surface with %s (got %s)"
			% [SHADER_PATH, shader_path])
	var seen: Dictionary = await _what_the_water_changes(water, 4)
	var share: float = float(seen["changed"]) / seen["sampled"]
	var size: Vector2i = seen["size"]
	_check(seen["finite"], "every pixel drawn with the water is finite")
	_check(share >= MIN_CHANGED, "the water changes %.1f %% of a %d × %d picture (at least %.0f %%)"
			% [100.0 * share, size.x, size.y, 100.0 * MIN_CHANGED])
	scene.queue_free()
	await process_frame
	await process_frame


## With [param triangular] the same lake on the triangular lattice, whose clipmap spaces its rows
## √3/2 as far apart (its side along Z is 221.7 m).
func _test_a_large_grid_draws_a_clipmap_that_covers_it(triangular := false) -> void:
	# 1024² cells of 0.25 m: a 256 m lake, 2 m deep over a flat red floor with mounds of water
	# on it, seen straight down from 120 m with a 50° field of view, so the picture spans the
	# clipmap's three finest levels (±32, ±64, ±128 m) and the seams between them. A hole or a
	# gap between rings (a wrong ring count, snap or centre) would show the red floor unchanged.
	# Sub-pixel T-junction cracks are not seen at this distance: the unit tests of
	# mesh_layout.rs check that each ring's edge vertices land on the next ring's.
	var scene := Node3D.new()
	root.add_child(scene)
	var sun := DirectionalLight3D.new()
	sun.rotation = Vector3(-0.9, 0.6, 0.0)
	scene.add_child(sun)
	var floor_material := StandardMaterial3D.new()
	floor_material.albedo_color = Color(0.9, 0.1, 0.1)
	var floor_plane := PlaneMesh.new()
	floor_plane.size = Vector2(LARGE_CELLS, LARGE_CELLS) * LARGE_CELL
	floor_plane.material = floor_material
	var ground := MeshInstance3D.new()
	ground.mesh = floor_plane
	ground.position.y = -0.01
	scene.add_child(ground)
	var water := PipeWater.new()
	water.grid_size = Vector2i(LARGE_CELLS, LARGE_CELLS)
	water.cell_size = LARGE_CELL
	water.initial_water_level = 2.0
	water.paused = true
	if triangular:
		water.neighbour_mode = PipeWater.NEIGHBOURS_TRIANGULAR
		water.momentum_advection = false
		water.detail_waves = false
	scene.add_child(water)
	# Mounds of water (one step spreads them a little), so the rings are checked over a surface
	# that is not flat.
	for i in 5:
		for j in 5:
			water.add_water(Vector3(-96.0 + 48.0 * i, 0.0, -96.0 + 48.0 * j), 1500.0, 16.0)
	water.step(0.05)
	var camera := Camera3D.new()
	camera.fov = 50.0
	scene.add_child(camera)
	camera.look_at_from_position(Vector3(0.0, 120.0, 0.0), Vector3.ZERO, Vector3.FORWARD)
	camera.make_current()
	for i in 5:
		await process_frame
	var surface: MeshInstance3D = _surface_of(water)
	var vertices: int = surface.mesh.surface_get_array_len(0) if surface and surface.mesh else 0
	var lattice: String = " (triangular lattice)" if triangular else ""
	print("%d² grid%s: the surface mesh has %d vertices" % [LARGE_CELLS, lattice, vertices])
	_check(vertices > 0 and vertices < LARGE_CELLS * LARGE_CELLS / 2,
			"a %d² grid%s is drawn by a clipmap of %d vertices, not one per cell" % [LARGE_CELLS,
			lattice, vertices])
	var seen: Dictionary = await _what_the_water_changes(water, 2)
	var sampled: int = seen["sampled"]
	var unchanged: int = sampled - seen["changed"]
	print("floor left unchanged by the water at %d of %d sampled pixels" % [unchanged, sampled])
	_check(unchanged == 0, "the clipmap's rings cover the lake%s without a hole or gap (%d of %d "
			% [lattice, unchanged, sampled] + "pixels show the bare floor)")
	scene.queue_free()
	await process_frame
	await process_frame


## On NEIGHBOURS_TRIANGULAR the surface is drawn where the lattice's cells lie. A 40 × 40
## lattice of 1 m cells, 1 m of water over flat ground that rises to a dry 5 m shelf from column
## 30 and from row 30 on, seen straight down by an orthographic camera (red floor under it): the
## water's drawn east edge on an even row and on an odd row, and its south edge, lie where the
## lattice puts them, about 0.19 of a cell past the last wet cell's centre (where the ground,
## read linearly between that cell and the dry one, rises through the surface). Odd rows lie half
## a cell further east; rows dx·√3/2 apart, so the south edge lies at 8.39 m, where drawing the
## array as a square grid would put it at 9.69 m.
func _test_water_on_the_triangular_lattice_is_drawn_where_its_cells_lie() -> void:
	var cells := 40
	var scene := Node3D.new()
	root.add_child(scene)
	var sun := DirectionalLight3D.new()
	sun.rotation = Vector3(-0.9, 0.6, 0.0)
	scene.add_child(sun)
	var floor_material := StandardMaterial3D.new()
	floor_material.albedo_color = Color(0.9, 0.1, 0.1)
	var floor_plane := PlaneMesh.new()
	floor_plane.size = Vector2(120.0, 120.0)
	floor_plane.material = floor_material
	var ground := MeshInstance3D.new()
	ground.mesh = floor_plane
	ground.position.y = -0.01
	scene.add_child(ground)
	var heights := PackedFloat32Array()
	heights.resize(cells * cells)
	for y in cells:
		for x in cells:
			heights[y * cells + x] = 5.0 if x >= 30 or y >= 30 else 0.0
	var water := PipeWater.new()
	water.grid_size = Vector2i(cells, cells)
	water.cell_size = 1.0
	water.neighbour_mode = PipeWater.NEIGHBOURS_TRIANGULAR
	water.momentum_advection = false
	water.detail_waves = false
	water.terrain_heights = heights
	water.initial_water_level = 1.0
	water.paused = true
	scene.add_child(water)
	var camera := Camera3D.new()
	camera.projection = Camera3D.PROJECTION_ORTHOGONAL
	camera.size = 48.0
	scene.add_child(camera)
	camera.look_at_from_position(Vector3(0.0, 50.0, 0.0), Vector3.ZERO, Vector3.FORWARD)
	camera.make_current()
	for i in 5:
		await process_frame
	await RenderingServer.frame_post_draw
	var with_water: Image = root.get_texture().get_image()
	water.show_mesh = false
	for i in 3:
		await process_frame
	await RenderingServer.frame_post_draw
	var without_water: Image = root.get_texture().get_image()
	var size: Vector2i = with_water.get_size()
	var metres_per_pixel: float = camera.size / size.y
	var row := sqrt(3.0) / 2.0
	# The farthest drawn water along +X on the pixel row through local Z, and along +Z on the
	# pixel column through local X, m (-INF when none).
	var east_edge := func(z: float) -> float:
		var py: int = int(z / metres_per_pixel + size.y / 2.0)
		var edge := -INF
		for px in size.x:
			var a: Color = with_water.get_pixel(px, py)
			var b: Color = without_water.get_pixel(px, py)
			if absf(a.r - b.r) + absf(a.g - b.g) + absf(a.b - b.b) > PIXEL_CHANGE:
				edge = maxf(edge, (px + 0.5 - size.x / 2.0) * metres_per_pixel)
		return edge
	var south_edge := func(x: float) -> float:
		var px: int = int(x / metres_per_pixel + size.x / 2.0)
		var edge := -INF
		for py in size.y:
			var a: Color = with_water.get_pixel(px, py)
			var b: Color = without_water.get_pixel(px, py)
			if absf(a.r - b.r) + absf(a.g - b.g) + absf(a.b - b.b) > PIXEL_CHANGE:
				edge = maxf(edge, (py + 0.5 - size.y / 2.0) * metres_per_pixel)
		return edge
	# Rows 10 (even) and 11 (odd): their last wet cell, 29, is centred at 29.5 − 20.25 m and
	# half a cell further east; row 29's centre lies 29.5·row − 20·row along Z.
	var past := 0.19
	var cases: Array = [
		["east edge of even row 10", east_edge.call((10.5 - 20.0) * row), 29.5 - 20.25 + past],
		["east edge of odd row 11", east_edge.call((11.5 - 20.0) * row), 30.0 - 20.25 + past],
		["south edge at x = -3 m", south_edge.call(-3.0), (29.5 - 20.0) * row + past * row],
	]
	for case: Array in cases:
		_near(case[1], case[2], LATTICE_EDGE_TOLERANCE,
				"the water's drawn %s (%.3f m a pixel)" % [case[0], metres_per_pixel])
	_near(cases[1][1] - cases[0][1], 0.5, LATTICE_EDGE_TOLERANCE,
			"odd rows are drawn half a cell further east than even rows")
	scene.queue_free()
	await process_frame
	await process_frame


## A PipeWaterWorld draws its far water in its window's colours (issue #48). Its far mesh's
## material must hold the shader parameters the node's material set, at the same values, and no
## others: a duplicate() of the node's material set every default too, and Godot 4.3 converts a
## set source_color from sRGB to linear while it feeds an unset one's default as written, so the
## far water was darker. The node's material sets turbidity and has its properties listed first
## (what the inspector and duplicate() do: it fills the material's cache with the defaults). A
## still lake 2 m deep over the whole 256² world, seen straight down over the window's east
## edge: the water 4..12 m inside the window and 4..12 m outside it (the far mesh's 16 m texels)
## must be within SEAM_TOLERANCE of each other (not in Mobile: see _check_the_seam). Then
## parameters the node's material sets, clears or sets to the default its cache held reach the
## far material.
func _test_the_far_water_of_a_world_is_drawn_in_the_colours_of_its_window() -> void:
	var scene := Node3D.new()
	root.add_child(scene)
	var environment := Environment.new()
	environment.background_mode = Environment.BG_SKY
	environment.sky = Sky.new()
	environment.sky.sky_material = ProceduralSkyMaterial.new()
	var world_environment := WorldEnvironment.new()
	world_environment.environment = environment
	scene.add_child(world_environment)
	var sun := DirectionalLight3D.new()
	sun.rotation = Vector3(-0.9, 0.6, 0.0)
	scene.add_child(sun)
	var floor_material := StandardMaterial3D.new()
	floor_material.albedo_color = Color(0.55, 0.5, 0.42)
	var floor_plane := PlaneMesh.new()
	floor_plane.size = Vector2(WORLD_CELLS, WORLD_CELLS)
	floor_plane.material = floor_material
	var ground := MeshInstance3D.new()
	ground.mesh = floor_plane
	ground.position.y = -0.01
	scene.add_child(ground)
	var material := ShaderMaterial.new()
	material.shader = load(SHADER_PATH) as Shader
	material.set_shader_parameter("turbidity", 0.2)
	material.get_property_list()
	var world := PipeWaterWorld.new()
	world.world_size = Vector2i(WORLD_CELLS, WORLD_CELLS)
	world.ground_height = 0.0
	world.running = false
	world.window_cells = WORLD_WINDOW
	world.far_water_cells = WORLD_CELLS
	world.far_water_stride = 16
	world.water_material = material
	scene.add_child(world)
	await process_frame
	if not world.is_ready():
		_check(false, "the world exists: %s" % world.get_last_error())
		scene.free()
		return
	# 2 m of water over the whole world, poured in overlapping heaps and left to settle.
	var step: float = WORLD_CELLS / 16.0
	for i in 16:
		for j in 16:
			var at := Vector3((i + 0.5) * step, 0.0, (j + 0.5) * step) - Vector3(128.0, 0.0, 128.0)
			world.add_water(at, 2.0 * step * step, 1.5 * step)
	for i in 90:
		world.step(1.0 / 30.0)
	world.refresh_window()
	var edge: float = WORLD_WINDOW / 2.0
	var camera := Camera3D.new()
	camera.fov = 50.0
	scene.add_child(camera)
	camera.look_at_from_position(Vector3(edge, 60.0, 0.0), Vector3(edge, 0.0, 0.0), Vector3.FORWARD)
	camera.make_current()
	for i in 5:
		await process_frame
	var far_mesh: MeshInstance3D = world.get_node_or_null("FarWaterSurface")
	var far_material: ShaderMaterial = null
	if far_mesh != null:
		far_material = far_mesh.material_override as ShaderMaterial
	_check(far_material != null and far_material != material
			and far_material.shader == material.shader,
			"the far water has a ShaderMaterial of its own on the node material's shader")
	if far_material == null:
		scene.queue_free()
		return
	var surface: float = world.get_height(Vector3(edge, 0.0, 0.0))
	print("world lake: surface %.3f m at the window's east edge, window %s" % [surface,
			world.get_window_rect()])
	for name in ["scatter_colour", "absorption_colour", "turbidity"]:
		print("   %s: shader default %s; set on the window's material %s, on the far one %s" % [
				name, RenderingServer.shader_get_parameter_default(material.shader.get_rid(), name),
				RenderingServer.material_get_param(material.get_rid(), name),
				RenderingServer.material_get_param(far_material.get_rid(), name)])
	var apart: Array[String] = _parameters_apart(material, far_material)
	_check(apart.is_empty(), "the far material sets the parameters the node's material set, "
			+ "and no others (apart: %d: %s)" % [apart.size(), ", ".join(apart)])
	await _check_the_seam(camera, edge, surface)
	# Later changes: a colour set, a parameter cleared, a colour set to the default its cache
	# held (found by the far material's sweep of every parameter, a quarter second apart).
	material.set_shader_parameter("absorption_colour", Color(0.3, 0.6, 0.9))
	material.set_shader_parameter("turbidity", null)
	material.set_shader_parameter("scatter_colour", material.get_shader_parameter("scatter_colour"))
	for i in 30:
		await process_frame
	apart = _parameters_apart(material, far_material)
	_check(apart.is_empty(), "a colour set, a parameter cleared and one set to its default on the "
			+ "node's material reach the far material (apart: %s)" % ", ".join(apart))
	await _check_the_seam(camera, edge, surface)
	await _check_the_window_turns_into_the_far_water(world, material, camera, edge, surface)
	scene.queue_free()
	await process_frame
	await process_frame


## A mound of water poured on the window's east edge (at [param edge], over the lake whose
## surface is at [param surface]) is drawn at full height by the window's 1 m cells and spread
## over its 16 m texel by the far water: without the band along the window's edge the two meshes
## meet in a step. With the band the window draws the far water's surface on its edge, so the
## colours 1..3 m either side of the edge over the mound must be as close as over the flat lake
## beside it. The band is then taken off the window's material (what main drew before it) and
## the step must show in the picture, so that the check can see one. In Mobile the figures are
## printed, not checked: on lavapipe it draws thin light lines along the triangles' edges, many
## more a metre on the window's 1 m cells than on the far texels and brightest on the mound's
## slopes, so the mound's edge reads 0.078 apart with the band (0.094 without) where Forward+
## draws it 0.008 apart (0.090 without); the pictures show the same water either side.
func _check_the_window_turns_into_the_far_water(world: PipeWaterWorld, material: ShaderMaterial,
		camera: Camera3D, edge: float, surface: float) -> void:
	world.add_water(Vector3(edge, 0.0, 0.0), 200.0, 6.0)
	world.step(1.0 / 30.0)
	world.refresh_window()
	for i in 3:
		await process_frame
	var band: Vector4 = material.get_shader_parameter("far_blend")
	print("   the window's band along its edges (-X, -Z, +X, +Z): %s m; the mound %.3f m high on "
			% [band, world.get_height(Vector3(edge, 0.0, 0.0)) - surface]
			+ "the edge, the far water there %.3f m" % (world.get_far_height_image().get_pixelv(
			Vector2i(10, 8)).r - surface))
	_check(band.x > 0.0 and band.z > 0.0, "the window's material has the band along the edges past "
			+ "which far water is drawn")
	var with_band: Array[float] = await _seam_steps(camera, edge, surface)
	material.set_shader_parameter("far_blend", Vector4.ZERO)
	var without_band: Array[float] = await _seam_steps(camera, edge, surface)
	material.set_shader_parameter("far_blend", band)
	print("   colours 1..3 m either side of the edge, apart in a channel: over the mound %.4f, "
			% with_band[0] + "over the flat lake %.4f; without the band %.4f and %.4f"
			% [with_band[1], without_band[0], without_band[1]])
	if _argument("renderer", "") == "mobile":
		print("   (the mound's edge is not checked in Mobile: see above)")
		return
	_check(with_band[0] <= with_band[1] + 0.02, "with the band the mound's edge is drawn as the "
			+ "flat lake's (%.4f apart, the flat lake %.4f)" % [with_band[0], with_band[1]])
	_check(without_band[0] >= with_band[0] + 0.015, "without the band the step shows (%.4f apart, "
			% without_band[0] + "%.4f with it)" % with_band[0])


## The largest channel difference between the median colours 1..3 m inside and outside the
## window's east edge, over the mound (z = -3..3 m) and over the flat lake (z = -22..-16 m).
func _seam_steps(camera: Camera3D, edge: float, surface: float) -> Array[float]:
	for i in 2:
		await process_frame
	await RenderingServer.frame_post_draw
	var picture: Image = root.get_texture().get_image()
	var steps: Array[float] = []
	for z in [Vector2(-3.0, 3.0), Vector2(-22.0, -16.0)]:
		var inside: Color = _median_colour(picture, camera, edge - 3.0, edge - 1.0, surface, z.x, z.y)
		var outside: Color = _median_colour(picture, camera, edge + 1.0, edge + 3.0, surface, z.x, z.y)
		steps.append(_channels_apart(inside, outside))
	return steps


## The largest difference between [param a] and [param b] in a colour channel (R, G, B).
func _channels_apart(a: Color, b: Color) -> float:
	return maxf(absf(a.r - b.r), maxf(absf(a.g - b.g), absf(a.b - b.b)))


## Each shader parameter but FAR_OWN_PARAMETERS whose value the RenderingServer holds for
## [param far] differs from what it holds for [param near] (nothing held: the shader's default),
## as "name (near value, far value)".
func _parameters_apart(near: ShaderMaterial, far: ShaderMaterial) -> Array[String]:
	var apart: Array[String] = []
	for entry: Dictionary in near.shader.get_shader_uniform_list():
		var name: String = entry["name"]
		if FAR_OWN_PARAMETERS.has(name):
			continue
		var a: Variant = RenderingServer.material_get_param(near.get_rid(), name)
		var b: Variant = RenderingServer.material_get_param(far.get_rid(), name)
		if typeof(a) != typeof(b) or a != b:
			apart.append("%s (%s, %s)" % [name, a, b])
	return apart


## The picture's median colours of the lake 4..12 m inside and outside the window's east edge
## (at x = [param edge], the surface at [param surface]), over 16 m along it, within
## SEAM_TOLERANCE of each other in each channel. Medians: Mobile on lavapipe draws thin light
## lines along the triangles' edges, many more a metre on the window's 1 m cells than on the far
## mesh's texels. In Mobile the figures are printed, not checked: it draws the two meshes 0.02
## (defaults) to 0.05 (absorption_colour set) apart with the same parameters on both materials,
## also with the far water at stride 1 (1 m texels), so something else of the Mobile renderer's
## differs between the two meshes (not found yet).
func _check_the_seam(camera: Camera3D, edge: float, surface: float) -> void:
	await RenderingServer.frame_post_draw
	var picture: Image = root.get_texture().get_image()
	var inside: Color = _median_colour(picture, camera, edge - 12.0, edge - 4.0, surface)
	var outside: Color = _median_colour(picture, camera, edge + 4.0, edge + 12.0, surface)
	var apart: float = _channels_apart(inside, outside)
	print("   seam: window side %s = %s, far side %s = %s" % [inside, _bytes(inside), outside,
			_bytes(outside)])
	if _argument("renderer", "") == "mobile":
		print("   (the seam's colours are not checked in Mobile, %.4f apart: see _check_the_seam)"
				% apart)
		return
	_check(apart <= SEAM_TOLERANCE, "the far water is drawn in the window's colours at the seam "
			+ "(%.4f apart in a channel, at most %.2f)" % [apart, SEAM_TOLERANCE])


## The median of each channel of [param picture] at the points of the water's surface (height
## [param y]) from x = [param x0] to [param x1] and z = [param z0] to [param z1], one a metre.
func _median_colour(picture: Image, camera: Camera3D, x0: float, x1: float, y: float,
		z0 := -8.0, z1 := 8.0) -> Color:
	var reds := PackedFloat32Array()
	var greens := PackedFloat32Array()
	var blues := PackedFloat32Array()
	for x in range(int(x0), int(x1) + 1):
		for z in range(int(z0), int(z1) + 1):
			var pixel: Vector2 = camera.unproject_position(Vector3(x, y, z))
			if Rect2(Vector2.ZERO, picture.get_size()).has_point(pixel):
				var c: Color = picture.get_pixelv(Vector2i(pixel))
				reds.append(c.r)
				greens.append(c.g)
				blues.append(c.b)
	if reds.is_empty():
		return Color(-1.0, -1.0, -1.0)
	reds.sort()
	greens.sort()
	blues.sort()
	var middle: int = reds.size() / 2
	return Color(reds[middle], greens[middle], blues[middle])


## A colour as 0..255 bytes, "(r, g, b)".
func _bytes(c: Color) -> String:
	return "(%d, %d, %d)" % [c.r8, c.g8, c.b8]


## The node's internal surface mesh, or null.
func _surface_of(water: PipeWater) -> MeshInstance3D:
	for child in water.get_children(true):
		if child is MeshInstance3D:
			return child
	return null


## Draws the picture with [param water]'s surface, hides it, draws it again and compares every
## [param stride]-th pixel of each row and column: how many the water changed (by more than
## [constant PIXEL_CHANGE] summed over R, G, B), of how many sampled, whether all drawn with the
## water are finite, and the picture's size.
func _what_the_water_changes(water: PipeWater, stride: int) -> Dictionary:
	await RenderingServer.frame_post_draw
	var with_water: Image = root.get_texture().get_image()
	water.show_mesh = false
	for i in 3:
		await process_frame
	await RenderingServer.frame_post_draw
	var without_water: Image = root.get_texture().get_image()
	var changed: int = 0
	var sampled: int = 0
	var finite: bool = true
	var size: Vector2i = with_water.get_size()
	for y in range(0, size.y, stride):
		for x in range(0, size.x, stride):
			var a: Color = with_water.get_pixel(x, y)
			var b: Color = without_water.get_pixel(x, y)
			sampled += 1
			finite = finite and is_finite(a.r + a.g + a.b)
			if absf(a.r - b.r) + absf(a.g - b.g) + absf(a.b - b.b) > PIXEL_CHANGE:
				changed += 1
	return {"changed": changed, "sampled": sampled, "finite": finite, "size": size}


## Heights of the scene's terrain: a channel falling along +X into a pool, banks on both sides.
func _terrain() -> PackedFloat32Array:
	var heights := PackedFloat32Array()
	heights.resize(CELLS * CELLS)
	for y in CELLS:
		for x in CELLS:
			var u: float = (x + 0.5) / CELLS
			var v: float = (y + 0.5) / CELLS - 0.5
			var bed: float = 4.0 * (1.0 - u) + 8.0 * v * v * 4.0
			var pool: float = Vector2(u - 0.75, v).length()
			heights[y * CELLS + x] = bed - 3.0 * maxf(0.0, 1.0 - pool / 0.22)
	return heights


## A plain grey ground drawn from the node's terrain heights, so the water has a bed to show.
func _ground() -> MeshInstance3D:
	var shader := Shader.new()
	shader.code = """
shader_type spatial;
uniform sampler2D height_texture : filter_linear, repeat_disable;
void vertex() {
	VERTEX.y = textureLod(height_texture, VERTEX.xz / %.1f + 0.5, 0.0).b;
}
void fragment() {
	ALBEDO = vec3(0.55, 0.5, 0.42);
}
""" % (CELLS * CELL)
	var material := ShaderMaterial.new()
	material.shader = shader
	var plane := PlaneMesh.new()
	plane.size = Vector2(CELLS, CELLS) * CELL
	plane.subdivide_width = CELLS - 1
	plane.subdivide_depth = CELLS - 1
	var mesh := MeshInstance3D.new()
	mesh.mesh = plane
	mesh.material_override = material
	mesh.custom_aabb = AABB(Vector3(-CELLS, -20.0, -CELLS), Vector3(2 * CELLS, 40.0, 2 * CELLS))
	return mesh
