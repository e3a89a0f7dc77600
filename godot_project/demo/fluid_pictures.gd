extends SceneTree
## Takes the pictures of README.md's "Lava, mud, erosion and hex water" section, each a small
## scene of its own drawn with the addon's water surface.
##
## In a window (Forward+), from the repository root after cargo xtask build:
## [codeblock]
## xvfb-run -a -s "-screen 0 1024x576x24" $GODOT --rendering-driver vulkan \
##     --resolution 1024x576 --path godot_project -s res://demo/fluid_pictures.gd \
##     -- --out=/tmp/pictures
## [/codeblock]
## It saves [code]lava.png[/code] (lava with the lava preset welling from a volcano's crater for
## [constant LAVA_SECONDS] s, then [constant LAVA_COOLING_SECONDS] s more with the vent shut,
## cooling into rock where it stands still or thins out), [code]erosion.png[/code]
## (a river fed by a source on a bare slope for [constant EROSION_SECONDS] s with erosion on,
## the ground coloured by how much it was cut or raised) and [code]hex_water.png[/code] (a column
## of water released on the triangular lattice, its front spreading as a circle over hexagonal
## cells). [code]--only=lava[/code] (or [code]erosion[/code], [code]hex[/code]) takes one. Every
## scene runs on the CPU backend, stepped with [method PipeWater.step], and prints its figures
## (the lava's ledger, the sediment ledger, the front's radii).

## Simulated seconds of lava, of the eroding river and of the spreading column.
const LAVA_SECONDS := 900.0
const LAVA_COOLING_SECONDS := 900.0
const EROSION_SECONDS := 60.0
const HEX_SECONDS := 5.0
## Frames drawn before a picture is saved (the flow-map animation settles).
const SETTLE_FRAMES := 4

var _out: String = "user://pictures"


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	var only: String = ""
	for argument in OS.get_cmdline_user_args():
		if argument.begins_with("--out="):
			_out = argument.get_slice("=", 1)
		elif argument.begins_with("--only="):
			only = argument.get_slice("=", 1)
	DirAccess.make_dir_recursive_absolute(_out)
	if only in ["", "lava"]:
		await _lava()
	if only in ["", "erosion"]:
		await _erosion()
	if only in ["", "hex"]:
		await _hex_water()
	quit(0)


## A scene with a sky, a sun and a camera looking from [param eye] at [param target].
func _stage(eye: Vector3, target: Vector3) -> Node3D:
	var scene := Node3D.new()
	root.add_child(scene)
	var environment := Environment.new()
	environment.background_mode = Environment.BG_SKY
	environment.sky = Sky.new()
	var sky := ProceduralSkyMaterial.new()
	# A ground half of the sky close to the scenes' own, so ripples do not mirror a black one.
	sky.ground_bottom_color = Color(0.32, 0.30, 0.26)
	sky.ground_horizon_color = Color(0.55, 0.56, 0.55)
	environment.sky.sky_material = sky
	environment.tonemap_mode = Environment.TONE_MAPPER_FILMIC
	environment.glow_enabled = true
	environment.glow_intensity = 0.35
	var world := WorldEnvironment.new()
	world.environment = environment
	scene.add_child(world)
	var sun := DirectionalLight3D.new()
	sun.rotation = Vector3(-0.8, 0.9, 0.0)
	sun.shadow_enabled = true
	scene.add_child(sun)
	var camera := Camera3D.new()
	camera.fov = 55.0
	camera.far = 2000.0
	scene.add_child(camera)
	camera.look_at_from_position(eye, target)
	camera.make_current()
	return scene


## A PipeWater on the CPU backend with [param heights] for its ground, paused (stepped by hand).
func _water(size: Vector2i, cell: float, heights: PackedFloat32Array, level: float) -> PipeWater:
	var water := PipeWater.new()
	water.backend = PipeWater.BACKEND_CPU
	water.paused = true
	water.grid_size = size
	water.cell_size = cell
	water.terrain_heights = heights
	water.initial_water_level = level
	return water


## Local XZ of cell (x, y)'s centre: on the square grid, or on the triangular lattice (odd rows
## half a cell further along +X, rows cell·√3/2 apart), centred on the node.
func _centre(x: int, y: int, size: Vector2i, cell: float, triangular: bool) -> Vector2:
	if not triangular:
		return Vector2((x + 0.5 - size.x / 2.0) * cell, (y + 0.5 - size.y / 2.0) * cell)
	var row := cell * sqrt(3.0) / 2.0
	return Vector2((x + 0.5 + 0.5 * (y % 2)) * cell - (size.x + 0.5) * cell / 2.0,
			(y + 0.5) * row - size.y * row / 2.0)


## The ground as a mesh with a vertex on every cell centre at its height and [param colours] (one
## a cell), triangulated along the lattice's triangles when [param triangular].
func _ground(heights: PackedFloat32Array, colours: PackedColorArray, size: Vector2i, cell: float,
		triangular: bool, material: Material) -> MeshInstance3D:
	var tool := SurfaceTool.new()
	tool.begin(Mesh.PRIMITIVE_TRIANGLES)
	for y in size.y:
		for x in size.x:
			var p := _centre(x, y, size, cell, triangular)
			tool.set_color(colours[y * size.x + x])
			tool.add_vertex(Vector3(p.x, heights[y * size.x + x], p.y))
	for y in size.y - 1:
		# An even row above an odd one: the short diagonal runs north-east to south-west.
		var east_shift: bool = not triangular or y % 2 == 0
		for x in size.x - 1:
			var nw: int = y * size.x + x
			var ne: int = nw + 1
			var sw: int = nw + size.x
			var se: int = sw + 1
			if east_shift:
				for i in [nw, ne, sw, ne, se, sw]:
					tool.add_index(i)
			else:
				for i in [nw, ne, se, nw, se, sw]:
					tool.add_index(i)
	tool.generate_normals()
	var mesh := MeshInstance3D.new()
	mesh.mesh = tool.commit()
	mesh.material_override = material
	return mesh


## A material that shows the vertices' colours.
func _vertex_colour_material() -> StandardMaterial3D:
	var material := StandardMaterial3D.new()
	material.vertex_color_use_as_albedo = true
	material.vertex_color_is_srgb = true
	material.roughness = 0.9
	return material


func _save(name: String) -> void:
	for i in SETTLE_FRAMES:
		await process_frame
	await RenderingServer.frame_post_draw
	var path := _out.path_join(name)
	var error := root.get_texture().get_image().save_png(path)
	print("saved %s (%s)" % [path, error_string(error)])


## Lava with the lava preset welling from a volcano's crater: a cone with a crater and a notch
## in its rim towards +X, over a plain sloping gently the same way. Rock that the lava left
## (the ground raised by cooling) is drawn dark, the rest of the ground by height.
func _lava() -> void:
	var size := Vector2i(128, 128)
	var cell := 1.0
	var heights := PackedFloat32Array()
	heights.resize(size.x * size.y)
	for y in size.y:
		for x in size.x:
			var p := _centre(x, y, size, cell, false)
			var c := p - Vector2(-28.0, 0.0)
			var r := c.length()
			var cone := 26.0 * exp(-pow(r / 30.0, 2.0))
			var crater := 7.0 * exp(-pow(r / 6.0, 2.0))
			var notch := 5.0 * exp(-pow(c.y / 3.0, 2.0)) * clampf((c.x - 2.0) / 4.0, 0.0, 1.0) \
					* exp(-pow((r - 7.0) / 4.0, 2.0))
			var ripples := 0.6 * sin(0.21 * p.x + 0.7 * sin(0.13 * p.y)) * cos(0.17 * p.y)
			heights[y * size.x + x] = cone - crater - notch + ripples - 0.06 * p.x
	var scene := _stage(Vector3(70.0, 55.0, 60.0), Vector3(-8.0, 4.0, 0.0))
	var water := _water(size, cell, heights, -100.0)
	water.boundary_east = PipeWater.BOUNDARY_OPEN
	scene.add_child(water)
	water.apply_fluid_preset(PipeWaterFluid.PRESET_LAVA)
	water.momentum_advection = false
	water.detail_waves = false
	var vent: int = water.add_source(Vector3(-28.0, 0.0, 0.0), 1.0, 2.5)
	var step := 1.0
	var elapsed := 0.0
	while elapsed < LAVA_SECONDS:
		water.step(step)
		elapsed += step
	# The vent stops: what drains and thins out cools into rock, the thick front still glows.
	water.remove_source(vent)
	while elapsed < LAVA_SECONDS + LAVA_COOLING_SECONDS:
		water.step(step)
		elapsed += step
	var now: PackedFloat32Array = water.get_terrain_heights()
	var colours := PackedColorArray()
	colours.resize(size.x * size.y)
	var rock_cells := 0
	for i in size.x * size.y:
		var raised: float = now[i] - heights[i]
		var grass := Color(0.36, 0.38, 0.24).lerp(Color(0.45, 0.40, 0.33),
				clampf(heights[i] / 20.0, 0.0, 1.0))
		var rock := Color(0.09, 0.08, 0.08)
		colours[i] = grass.lerp(rock, clampf(raised / 0.02, 0.0, 1.0))
		rock_cells += 1 if raised > 0.001 else 0
	scene.add_child(_ground(now, colours, size, cell, false, _vertex_colour_material()))
	var ledger: Dictionary = water.get_water_ledger()
	print(("lava: %.0f s, %.1f m³ poured, %.1f m³ flowing, %.2f m³ set into rock over %d cells "
			+ "(ledger expected %.3f, total %.3f m³)") % [
			elapsed, ledger["added"], ledger["total"], water.get_solidified_volume(), rock_cells,
			ledger["expected"], ledger["total"]])
	await _save("lava.png")
	scene.queue_free()
	await process_frame


## A river fed by a source at the top of a bare slope (falling 1 in 8 along +X, a shallow
## valley down its middle, open at the bottom) with erosion on (PipeWaterErosion's defaults) for
## [constant EROSION_SECONDS] s: the ground is coloured by how much it changed, cut red-brown,
## raised pale.
func _erosion() -> void:
	var size := Vector2i(128, 80)
	var cell := 1.0
	var heights := PackedFloat32Array()
	heights.resize(size.x * size.y)
	for y in size.y:
		for x in size.x:
			var p := _centre(x, y, size, cell, false)
			var valley := 0.004 * p.y * p.y
			var bumps := 0.35 * sin(0.31 * p.x + 1.3) * sin(0.23 * p.y) + 0.2 * sin(0.11 * p.x - 0.4 * p.y)
			heights[y * size.x + x] = -0.125 * p.x + valley + bumps
	var scene := _stage(Vector3(72.0, 52.0, 46.0), Vector3(-8.0, -6.0, 0.0))
	var water := _water(size, cell, heights, -100.0)
	water.boundary_east = PipeWater.BOUNDARY_OPEN
	var erosion: Resource = ClassDB.instantiate(&"PipeWaterErosion")
	erosion.set(&"enabled", true)
	water.erosion = erosion
	water.detail_waves = false
	scene.add_child(water)
	water.add_source(Vector3(-58.0, 0.0, 0.0), 3.0, 2.0)
	var step := 0.5
	var elapsed := 0.0
	while elapsed < EROSION_SECONDS:
		water.step(step)
		elapsed += step
	var now: PackedFloat32Array = water.get_terrain_heights()
	var colours := PackedColorArray()
	colours.resize(size.x * size.y)
	var deepest := 0.0
	var highest := 0.0
	for i in size.x * size.y:
		var change: float = now[i] - heights[i]
		deepest = minf(deepest, change)
		highest = maxf(highest, change)
		var soil := Color(0.50, 0.46, 0.34)
		if change < 0.0:
			colours[i] = soil.lerp(Color(0.42, 0.16, 0.08), clampf(-change / 0.5, 0.0, 1.0))
		else:
			colours[i] = soil.lerp(Color(0.88, 0.82, 0.62), clampf(change / 0.5, 0.0, 1.0))
	scene.add_child(_ground(now, colours, size, cell, false, _vertex_colour_material()))
	var totals: Dictionary = water.get_erosion_totals()
	print("erosion: %.0f s, ground cut by up to %.3f m and raised by up to %.3f m; sediment %s"
			% [
			elapsed, -deepest, highest, totals])
	await _save("erosion.png")
	scene.queue_free()
	await process_frame


## A column of water released on the triangular lattice (NEIGHBOURS_TRIANGULAR) over gently
## rolling ground, after [constant HEX_SECONDS] s: the ground is drawn as the lattice's
## hexagonal cells (each tinted by its height, outlined), the water on them.
func _hex_water() -> void:
	var size := Vector2i(56, 64)
	var cell := 1.5
	var heights := PackedFloat32Array()
	heights.resize(size.x * size.y)
	var colours := PackedColorArray()
	colours.resize(size.x * size.y)
	for y in size.y:
		for x in size.x:
			var p := _centre(x, y, size, cell, true)
			var h := 0.25 * sin(0.23 * p.x) * cos(0.19 * p.y) + 0.0008 * p.length_squared()
			heights[y * size.x + x] = h
			var tint := 0.5 + 0.5 * sin(float(x * 7 + y * 13))
			colours[y * size.x + x] = Color(0.30, 0.36, 0.20).lerp(Color(0.45, 0.42, 0.28), tint * 0.6)
	var scene := _stage(Vector3(0.0, 40.0, 46.0), Vector3(0.0, -2.0, 4.0))
	var water := _water(size, cell, heights, -100.0)
	water.neighbour_mode = PipeWater.NEIGHBOURS_TRIANGULAR
	water.momentum_advection = false
	water.detail_waves = false
	scene.add_child(water)
	var volume := PI * 10.0 * 10.0 * 2.0
	water.add_water(Vector3.ZERO, volume, 10.0)
	var step := 0.25
	var elapsed := 0.0
	while elapsed < HEX_SECONDS:
		water.step(step)
		elapsed += step
	var shader := Shader.new()
	shader.code = """
shader_type spatial;
// The lattice's hexagonal cells outlined: the border lies where a point is as near to its
// second-nearest cell centre as to its nearest.
uniform float cell = 1.0;
uniform vec2 grid = vec2(56.0, 64.0);
varying vec3 local;
void vertex() {
	local = VERTEX;
}
void fragment() {
	float s = cell * 0.8660254;
	vec2 extent = vec2((grid.x + 0.5) * cell, grid.y * s);
	float r = (local.z + 0.5 * extent.y) / s - 0.5;
	float d1 = 1.0e9;
	float d2 = 1.0e9;
	for (int k = 0; k <= 1; k++) {
		float y = floor(r) + float(k);
		float shift = 0.5 * mod(y, 2.0);
		float c = (local.x + 0.5 * extent.x) / cell - 0.5 - shift;
		for (int i = -1; i <= 1; i++) {
			float x = round(c) + float(i);
			vec2 centre = vec2((x + 0.5 + shift) * cell - 0.5 * extent.x, (y + 0.5) * s - 0.5 * extent.y);
			float d = distance(centre, local.xz);
			if (d < d1) {
				d2 = d1;
				d1 = d;
			} else if (d < d2) {
				d2 = d;
			}
		}
	}
	float border = 1.0 - smoothstep(0.03 * cell, 0.08 * cell, d2 - d1);
	ALBEDO = COLOR.rgb * COLOR.rgb * (1.0 - 0.5 * border);
	ROUGHNESS = 0.9;
}
"""
	var material := ShaderMaterial.new()
	material.shader = shader
	material.set_shader_parameter("cell", cell)
	material.set_shader_parameter("grid", Vector2(size))
	scene.add_child(_ground(heights, colours, size, cell, true, material))
	var radii := PackedFloat32Array()
	for k in 12:
		var angle := TAU * k / 12.0
		var reach := 0.0
		var d := 0.0
		while d < 40.0:
			if water.get_depth(Vector3(cos(angle) * d, 0.0, sin(angle) * d)) > 0.01:
				reach = d
			d += 0.05
		radii.append(reach)
	var low: float = radii[0]
	var high: float = radii[0]
	var sum := 0.0
	for v in radii:
		low = minf(low, v)
		high = maxf(high, v)
		sum += v
	print(("hex water: %.2f s after a %.0f m³ column; front (1 cm) radius along 0°, 30°, … : %s m, "
			+ "(max − min)/mean %.1f %%") % [
			elapsed, volume, radii, 100.0 * (high - low) / (sum / 12.0)])
	await _save("hex_water.png")
	scene.queue_free()
	await process_frame
