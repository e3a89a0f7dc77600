extends "res://tests/test_base.gd"
## The PipeWater editor tools, in a running editor: source nodes, paint strokes with undo and
## redo, and water baked into a saved scene.
##
## Runs inside the editor, headless, after an import (cargo xtask test does this for every Godot
## binary given):
## [codeblock]
## $GODOT --headless --path godot_project --import
## $GODOT --headless --editor --path godot_project -s res://tests/test_authoring.gd
## [/codeblock]
## With --editor this script is the editor's SceneTree. It builds a small scene (a pond in a
## bowl, and a PipeWaterSource), saves it in res://tests/authoring_pond/ (the editor opens only
## scenes inside the project; the folder is removed at the end) as the edited scene, then
## drives the addon's EditorPlugin (enabled by the project, as plugin.cfg names it) the way the
## viewport does, and the editor's own undo history. Checks that feed bad values expect Godot
## errors starting with "PipeWaterSource:" and "PipeWater:". Every check prints the figures it
## compared; the run ends with PIPEWATER TESTS PASSED or PIPEWATER TESTS FAILED.

const Plugin := preload("res://addons/pipe_water/editor/plugin.gd")
const Stroke := preload("res://addons/pipe_water/editor/stroke.gd")
const SCENE_DIR := "res://tests/authoring_pond"
const SCENE_PATH := SCENE_DIR + "/pond.tscn"
const GRID := Vector2i(48, 32)
## Cells of the world the world test paints (six pages of 56²).
const WORLD_CELLS := Vector2i(300, 200)
## The pond's level, local m: the bowl's floor lies 2 m below it.
const POND_LEVEL := 1.0
## Rate of the test's spring, m³/s.
const SPRING_RATE := 2.0
## A source's delivery agrees with rate × time within this (m³): it carries the fraction of a
## quantum it could not deliver yet in each of its cells (a quantum is about 1e-6 m³ here).
const DELIVERY_TOLERANCE := 1.0e-4
## Frames of 1/60 s each stage of the source test runs.
const FRAMES := 60
## Frames the editor gets to open a scene or select a node.
const EDITOR_FRAMES := 120

var _started := false
var _running := false
var _plugin: EditorPlugin
var _water: PipeWater
var _root: Node3D


func _process(_delta: float) -> bool:
	if not _started:
		_started = true
		print("PipeWater authoring tests in the editor, Godot %s" % Engine.get_version_info().string)
		if not Engine.is_editor_hint():
			_check(false, "the script runs inside the editor (run it with --editor)")
			_finish()
			return true
	if _running:
		return false
	if EditorInterface.get_script_editor() == null \
			or EditorInterface.get_resource_filesystem().is_scanning():
		return false
	_running = true
	_run.call_deferred()
	return false


func _run() -> void:
	if not ClassDB.class_exists(&"PipeWaterSource"):
		_check(false, "the PipeWaterSource class is registered (is the library in the addon?)")
		_finish()
		return
	_plugin = Plugin.running_in(self)
	_check(_plugin != null, "the editor runs the PipeWater plugin (%s, enabled by the project)"
			% Plugin.SCRIPT_PATH)
	if _plugin == null or not await _open_pond():
		_remove_the_pond()
		_finish()
		return
	print("backend: %s" % _water.get_backend_description())
	await _test_a_source_nodes_rate_and_place_reach_the_water_and_follow_the_node()
	await _test_a_paint_stroke_and_its_undo_restore_the_water_bit_for_bit()
	await _test_a_stroke_from_the_viewport_is_one_undo_step()
	await _test_terrain_strokes_and_a_fill_undo_exactly()
	await _test_a_bake_survives_saving_and_reloading_the_scene()
	await _test_bad_values_are_refused_with_their_ranges()
	await _test_the_source_gizmo()
	await _test_a_stroke_pauses_the_water_the_editor_runs()
	await _test_fit_to_terrain_is_one_undo_step()
	await _test_a_world_is_painted_undone_and_baked_in_the_editor()
	_remove_the_pond()
	_finish()


## The toolbar's Fit to terrain over a HeightMapShape3D source sets grid_size, cell_size and the
## placement in one undoable step; undo gives the pond's grid and place back, redo the fit.
func _test_fit_to_terrain_is_one_undo_step() -> void:
	print("-- Fit to terrain")
	var shape := HeightMapShape3D.new()
	shape.map_width = 21
	shape.map_depth = 13
	var holder := CollisionShape3D.new()
	holder.shape = shape
	holder.position = Vector3(5.0, 0.0, 3.0)
	_root.add_child(holder)
	_water.terrain_source = _water.get_path_to(holder)
	var before := [_water.grid_size, _water.cell_size, _water.position]
	_plugin.fit_to_terrain(_water)
	var fitted := [_water.grid_size, _water.cell_size, _water.position]
	var history := _history()
	history.undo()
	var undone := [_water.grid_size, _water.cell_size, _water.position]
	history.redo()
	var redone := [_water.grid_size, _water.cell_size, _water.position]
	print("   before %s, fitted %s, undone %s, redone %s" % [before, fitted, undone, redone])
	_check(fitted == [Vector2i(21, 13), 1.0, Vector3(5.0, 0.0, 3.0)],
			"the water is fitted to the shape: 21 × 13 cells of 1 m centred on it")
	_check(undone == before, "undo gives the pond's grid and place back")
	_check(redone == fitted, "redo fits it again")
	history.undo()
	_water.terrain_source = NodePath()
	holder.free()


## A PipeWaterWorld in the edited scene, 300 × 200 cells (six pages): made in the editor, it
## stands still unless simulate_in_editor; its drawn window follows the editor's camera; the
## brushes paint it across page borders through the plugin, each stroke one undo step given back
## to the quantum and the bit; the mouse picks its surface; Bake stores its save beside the
## scene, and the scene loaded again starts from those depths and that ground.
func _test_a_world_is_painted_undone_and_baked_in_the_editor() -> void:
	print("-- a PipeWaterWorld in the editor")
	var world: PipeWaterWorld = ClassDB.instantiate(&"PipeWaterWorld")
	world.name = "World"
	world.world_size = WORLD_CELLS
	world.window_cells = 64
	world.position = Vector3(400, 0, 0)
	_root.add_child(world)
	world.owner = _root
	await process_frame
	_check(world.is_ready(), "the world is made in the editor (%s)" % world.get_last_error())
	if not world.is_ready():
		world.free()
		return
	var whole := Rect2i(Vector2i.ZERO, WORLD_CELLS)
	var ground := PackedFloat32Array()
	for y in WORLD_CELLS.y:
		for x in WORLD_CELLS.x:
			ground.append(0.04 * Vector2(x - 150.0, y - 100.0).length() - 2.0)
	_check(world.set_terrain_region(whole, ground), "the ground is set (a bowl, 2 m deep)")
	world.add_water(world.to_global(Vector3(0, 0, 0)), 3000.0, 25.0)
	await process_frame
	var poured: PackedInt32Array = world.get_water_region(whole)
	for i in 10:
		await physics_frame
	var standing := world.get_water_region(whole) == poured
	world.simulate_in_editor = true
	for i in 10:
		await physics_frame
	var flowing := world.get_water_region(whole) != poured
	world.simulate_in_editor = false
	print("   poured water after 10 physics frames: %s; with simulate_in_editor: %s" % [
			"unchanged" if standing else "moved", "moved" if flowing else "unchanged"])
	_check(standing, "the editor shows the water as it stands")
	_check(flowing, "simulate_in_editor makes it flow")
	await process_frame
	var camera := EditorInterface.get_editor_viewport_3d(0).get_camera_3d()
	var seen := world.to_local(camera.global_position)
	var half := Vector2(WORLD_CELLS) / 2.0
	var nearest := Vector2(clampf(seen.x, -half.x, half.x), clampf(seen.z, -half.y, half.y))
	var window: Rect2 = world.get_window_rect()
	print("   the editor's camera at local %s; the window %s" % [seen, window])
	_check(window.grow(1.0).has_point(nearest) and not window.has_point(Vector2.ZERO),
			"the drawn window follows the editor's camera, not the node's centre")

	EditorInterface.edit_node(world)
	await process_frame
	var toolbar: Control = _plugin.get("toolbar")
	_check(_plugin.get("water") == world and toolbar.visible,
			"selecting the world gives it to the plugin and shows the toolbar")
	_check(not (toolbar.get("_fit") as Button).visible,
			"without Fit to terrain (a world's size is its own)")
	var history := _world_history(world)
	var version: int = history.get_version()
	var before: PackedInt32Array = world.get_water_region(whole)
	var ledger_before: Dictionary = world.get_water_ledger()
	toolbar.set("radius", 6.0)
	toolbar.set("strength", 2.0)
	# Across the border between the first and second columns of pages (cell 56, local x −94).
	_plugin.call("begin_stroke", world, Stroke.Tool.ADD_WATER, world.to_global(Vector3(-100, 0, -40)))
	for x in [-98.0, -95.0, -92.0, -89.0]:
		_plugin.call("stroke_to", world.to_global(Vector3(x, 0, -42)), 0.25)
	var recording_during: bool = world.is_recording_changes()
	_check(_plugin.call("end_stroke"), "the stroke on the world ends in the history")
	var painted: PackedInt32Array = world.get_water_region(whole)
	var ledger_painted: Dictionary = world.get_water_ledger()
	print("   the stroke changed %d cells, added %.4f m³; history %d -> %d (%s)" % [
			_differing(before, painted), ledger_painted["added"] - ledger_before["added"], version,
			history.get_version(), history.get_current_action_name()])
	_check(recording_during and not world.is_recording_changes(),
			"the world records the stroke from press to release")
	_check(history.get_version() == version + 1
			and history.get_current_action_name() == "PipeWater: add water",
			"the stroke is one undo step named after its brush")
	history.undo()
	var undone: PackedInt32Array = world.get_water_region(whole)
	_check(undone == before, "undo gives the world's depths back bit for bit (%d cells differ)"
			% _differing(before, undone))
	history.redo()
	_check(world.get_water_region(whole) == painted, "redo gives the stroke's water back")
	var terrain: PackedFloat32Array = world.get_terrain_region(whole)
	for brush: Stroke.Tool in [Stroke.Tool.RAISE, Stroke.Tool.SMOOTH, Stroke.Tool.LOWER]:
		_plugin.call("begin_stroke", world, brush, world.to_global(Vector3(-94, 0, 10)))
		_plugin.call("stroke_to", world.to_global(Vector3(-90, 0, 14)), 0.5)
		_plugin.call("end_stroke")
	var shaped: PackedFloat32Array = world.get_terrain_region(whole)
	for i in 3:
		history.undo()
	var ground_back: PackedFloat32Array = world.get_terrain_region(whole)
	var heights_differ := 0
	for i in terrain.size():
		if ground_back[i] != terrain[i]:
			heights_differ += 1
	print("   raise, smooth and lower changed the ground: %s; undone, %d heights differ" % [
			shaped != terrain, heights_differ])
	_check(shaped != terrain and heights_differ == 0,
			"terrain strokes on the world undo to the bit")
	# A bank up the bowl's side, above the water poured in it.
	var bank := world.to_global(Vector3(130, 0, 0))
	bank.y = world.get_terrain_height(bank)
	var fill_before: PackedInt32Array = world.get_water_region(whole)
	_plugin.call("begin_stroke", world, Stroke.Tool.FILL, bank)
	_plugin.call("end_stroke")
	var filled_to: float = world.get_height(world.to_global(Vector3.ZERO))
	print("   a fill to the bank at %.4f m: the pond's surface at the centre %.4f m" % [bank.y,
			filled_to])
	_check(absf(filled_to - bank.y) < 1.0e-3, "the fill raises the world's pond to the clicked bank")
	history.undo()
	_check(world.get_water_region(whole) == fill_before, "its undo restores the water bit for bit")
	var ledger: Dictionary = world.get_water_ledger()
	_check(ledger["exact"], "the world's ledger is exact after the strokes and their undos "
			+ "(held %.6f m³, added %.6f, removed %.6f)" % [ledger["held"], ledger["added"],
			ledger["removed"]])

	var picker := Camera3D.new()
	root.add_child(picker)
	picker.look_at_from_position(world.to_global(Vector3(-20, 60, -30)), world.to_global(Vector3.ZERO),
			Vector3.UP)
	var centre: Vector2 = picker.get_viewport().get_visible_rect().size / 2.0
	var picked: Variant = _plugin.call("pick", picker, centre)
	var surface: float = world.get_height(picked) if picked is Vector3 else NAN
	print("   the viewport's centre picks %s; the surface there %.4f m" % [picked, surface])
	_check(picked is Vector3 and absf((picked as Vector3).y - surface) < 1.0e-3
			and world.get_depth(picked) > 0.0, "the mouse picks the world's water surface")
	picker.free()

	var spring := PipeWaterSource.new()
	spring.rate = 4.0
	spring.radius = 3.0
	spring.position = Vector3(-60, 0, 30)
	world.add_child(spring)
	spring.owner = _root
	await physics_frame
	await physics_frame
	var placed_id: int = spring.source_id
	var sources_placed: int = world.get_world_report()["sources"]
	spring.position = Vector3(-50, 0, 30)
	await physics_frame
	print("   a PipeWaterSource under the world: id %d, %d source(s); moved: id %d, %d source(s)" % [
			placed_id, sources_placed, spring.source_id, world.get_world_report()["sources"]])
	_check(placed_id > 0 and sources_placed == 1 and spring.source_id == placed_id
			and world.get_world_report()["sources"] == 1,
			"a source node under the world places one source, which follows the node")
	spring.clear_last_error()
	spring.water = _root
	_check(spring.get_last_error().contains("PipeWaterWorld") and spring.water == null,
			"a source's water that is neither a PipeWater nor a world is refused: %s"
			% spring.get_last_error())

	var baked_depths: PackedInt32Array = world.get_water_region(whole)
	var error: int = _plugin.call("bake", world)
	var baked: PipeWaterState = world.initial_state
	var expected_path := SCENE_DIR + "/pond_World.res"
	_check(error == OK and baked != null and baked.resource_path == expected_path,
			"Bake stores the world's save in initial_state as %s (error %d)" % [expected_path, error])
	if baked == null:
		world.free()
		return
	await physics_frame
	_check(world.get_water_region(whole) == baked_depths,
			"the world after the bake (made again from it) holds the water as it stood")
	_check(world.get_world_report()["sources"] == 1 and spring.source_id > 0,
			"made from its bake, the world holds the spring node's source once (%d sources)"
			% world.get_world_report()["sources"])
	_check(EditorInterface.save_scene() == OK, "the editor saves the scene with the world")
	var packed := ResourceLoader.load(SCENE_PATH, "", ResourceLoader.CACHE_MODE_IGNORE) as PackedScene
	var again: Node3D = packed.instantiate() if packed != null else null
	_check(again != null, "the saved scene loads again")
	if again != null:
		root.add_child(again)
		var reloaded := again.get_node("World") as PipeWaterWorld
		await physics_frame
		_check(reloaded.get_world_report()["sources"] == 1,
				"the reloaded world holds its spring node's source once (%d sources)"
				% reloaded.get_world_report()["sources"])
		var reloaded_depths: PackedInt32Array = reloaded.get_water_region(whole)
		print("   baked %d bytes; the reloaded world: %d of %d cells differ, ground equal: %s" % [
				baked.data.size(), _differing(baked_depths, reloaded_depths), baked_depths.size(),
				reloaded.get_terrain_region(whole) == world.get_terrain_region(whole)])
		_check(reloaded_depths == baked_depths, "the reloaded scene's world starts from the baked depths")
		_check(reloaded.get_terrain_region(whole) == world.get_terrain_region(whole),
				"and the baked ground")
		again.free()
	history.undo()
	_check(world.initial_state == null, "the world's bake is one undo step")
	world.free()


## The undo history the editor keeps for [param node].
func _world_history(node: Node) -> UndoRedo:
	var manager: EditorUndoRedoManager = _plugin.get_undo_redo()
	return manager.get_history_undo_redo(manager.get_object_history_id(node))


## Removes the pond's folder, so that the run leaves the project as it found it.
func _remove_the_pond() -> void:
	if not DirAccess.dir_exists_absolute(SCENE_DIR):
		return
	for file: String in DirAccess.get_files_at(SCENE_DIR):
		DirAccess.remove_absolute(ProjectSettings.globalize_path(SCENE_DIR.path_join(file)))
	DirAccess.remove_absolute(ProjectSettings.globalize_path(SCENE_DIR))


## Bowl-shaped ground: 2 m below the pond's level at the centre, rising 0.15 m per metre.
func _bowl() -> PackedFloat32Array:
	var heights := PackedFloat32Array()
	heights.resize(GRID.x * GRID.y)
	for y in GRID.y:
		for x in GRID.x:
			var at := Vector2(x + 0.5 - GRID.x / 2.0, y + 0.5 - GRID.y / 2.0)
			heights[y * GRID.x + x] = POND_LEVEL - 2.0 + 0.15 * at.length()
	return heights


## Saves the pond scene and opens it in the editor; true once it is the edited scene.
func _open_pond() -> bool:
	_remove_the_pond()
	DirAccess.make_dir_recursive_absolute(SCENE_DIR)
	var scene_root := Node3D.new()
	scene_root.name = "Pond"
	var water: PipeWater = ClassDB.instantiate(&"PipeWater")
	water.name = "Water"
	water.grid_size = GRID
	water.cell_size = 1.0
	water.initial_water_level = POND_LEVEL
	scene_root.add_child(water)
	water.owner = scene_root
	var packed := PackedScene.new()
	packed.pack(scene_root)
	scene_root.free()
	_check(ResourceSaver.save(packed, SCENE_PATH) == OK, "the pond scene is saved as %s" % SCENE_PATH)
	EditorInterface.open_scene_from_path(SCENE_PATH)
	for i in EDITOR_FRAMES:
		await process_frame
		var edited := EditorInterface.get_edited_scene_root()
		if edited != null and edited.scene_file_path == SCENE_PATH:
			_root = edited as Node3D
			_water = _root.get_node("Water") as PipeWater
			break
	_check(_water != null, "the editor opens it with its PipeWater")
	if _water == null:
		return false
	# terrain_heights is not stored in scenes (a heightmap texture is): the bowl is set here, and
	# only baking keeps it.
	_water.terrain_heights = _bowl()
	return _water.rebuild()


func _ledger_balances(statement: String) -> void:
	var ledger: Dictionary = _water.get_water_ledger()
	var quantum: float = _water.get_depth_quantum() * _water.cell_size * _water.cell_size
	_check(absf(ledger["total"] - ledger["expected"]) < 0.5 * quantum,
			"%s: total %.6f m³ = expected %.6f m³ to the quantum (added %.6f, removed %.6f)" % [
			statement, ledger["total"], ledger["expected"], ledger["added"], ledger["removed"]])


func _steps(frames: int) -> void:
	for i in frames:
		_water.step(1.0 / 60.0)


func _test_a_source_nodes_rate_and_place_reach_the_water_and_follow_the_node() -> void:
	print("-- a PipeWaterSource under the water: rate, place, moving, pausing, freeing")
	var source := PipeWaterSource.new()
	source.name = "Spring"
	source.rate = SPRING_RATE
	source.radius = 2.0
	source.position = Vector3(-8.0, 0.0, 0.0)
	_water.add_child(source)
	source.owner = _root
	var ids: PackedInt64Array = _water.get_source_ids()
	_check(source.source_id >= 1 and source.source_id in ids,
			"the node is placed as source %d of the water (its sources: %s)" % [source.source_id, ids])
	var first_id: int = source.source_id
	var here := _water.to_global(Vector3(-8.0, 0.0, 0.0))
	var there := _water.to_global(Vector3(10.0, 0.0, 5.0))
	var added: float = _water.get_water_ledger()["added"]
	var depth_here: float = _water.get_depth(here)
	_steps(FRAMES)
	var poured: float = _water.get_water_ledger()["added"] - added
	print("one second at %s: %.6f m³ added (rate %.1f m³/s), depth there %.4f -> %.4f m" % [
			source.position, poured, SPRING_RATE, depth_here, _water.get_depth(here)])
	_near(poured, SPRING_RATE, DELIVERY_TOLERANCE, "its rate reaches the simulation")
	_check(_water.get_depth(here) > depth_here, "the water rises where the node stands")
	source.position = Vector3(10.0, 0.0, 5.0)
	var depth_there: float = _water.get_depth(there)
	added = _water.get_water_ledger()["added"]
	_steps(FRAMES)
	poured = _water.get_water_ledger()["added"] - added
	print("one second at %s: %.6f m³ added, depth there %.4f -> %.4f m" % [source.position,
			poured, depth_there, _water.get_depth(there)])
	_check(source.source_id == first_id, "moving the node moves its source (id %d kept)" % first_id)
	_check(_water.get_depth(there) > depth_there + 0.01, "the water rises where the node moved to")
	_near(poured, SPRING_RATE, DELIVERY_TOLERANCE, "at the same rate")
	source.enabled = false
	added = _water.get_water_ledger()["added"]
	_steps(FRAMES)
	_near(_water.get_water_ledger()["added"] - added, 0.0, 0.0, "a disabled node pauses its source")
	# A drain never takes more than is there: it goes where the pond is deep.
	source.enabled = true
	source.position = Vector3(0.0, 0.0, -2.0)
	source.rate = -SPRING_RATE
	var removed: float = _water.get_water_ledger()["removed"]
	_steps(FRAMES)
	_near(_water.get_water_ledger()["removed"] - removed, SPRING_RATE, DELIVERY_TOLERANCE,
			"a negative rate drains")
	source.free()
	ids = _water.get_source_ids()
	_check(first_id not in ids, "freeing the node removes its source (sources now: %s)" % ids)
	var ledger: Dictionary = _water.get_water_ledger()
	_steps(FRAMES)
	var after: Dictionary = _water.get_water_ledger()
	_check(after["added"] == ledger["added"] and after["removed"] == ledger["removed"],
			"nothing is added or removed after the node is gone")
	_ledger_balances("after the source node is freed")


func _whole() -> Rect2i:
	return Rect2i(Vector2i.ZERO, _water.grid_size)


## The exact depth (m) of the cell under the water's local point (x, z), read from the state (the
## queries' snapshot may lag a GPU backend's edits by a frame or two).
func _cell_depth(x: float, z: float) -> float:
	var cell := Vector2i(floori(x + GRID.x / 2.0), floori(z + GRID.y / 2.0))
	return _water.get_water_region(Rect2i(cell, Vector2i.ONE))[0] * _water.get_depth_quantum()


## The exact surface (local m) of that cell: terrain plus depth.
func _cell_surface(x: float, z: float) -> float:
	var cell := Vector2i(floori(x + GRID.x / 2.0), floori(z + GRID.y / 2.0))
	return _water.get_terrain_region(Rect2i(cell, Vector2i.ONE))[0] + _cell_depth(x, z)


## The undo history of the edited scene.
func _history() -> UndoRedo:
	var manager: EditorUndoRedoManager = _plugin.get_undo_redo()
	return manager.get_history_undo_redo(manager.get_object_history_id(_water))


func _differing(a: PackedInt32Array, b: PackedInt32Array) -> int:
	var count := 0
	for i in mini(a.size(), b.size()):
		if a[i] != b[i]:
			count += 1
	return count + absi(a.size() - b.size())


## With simulate_in_editor on, a stroke pauses the water from press to release: what it records
## (and what its undo takes back) is the brush's change alone, not all the water that moved.
func _test_a_stroke_pauses_the_water_the_editor_runs() -> void:
	print("-- a stroke while the editor runs the water (simulate_in_editor)")
	EditorInterface.edit_node(_water)
	await process_frame
	var was_paused: bool = _water.paused
	_water.simulate_in_editor = true
	_water.paused = false
	# A mound far from the brush that spreads whenever the water runs.
	_water.add_water(_water.to_global(Vector3(10, 0, 6)), 40.0, 2.0)
	for i in 3:
		await process_frame
	var radius := 3.0
	(_plugin.get("toolbar") as Control).set("radius", radius)
	var at := Vector3(-6, 0, -4)
	var before: PackedInt32Array = _water.get_water_region(_whole())
	_plugin.call("begin_stroke", _water, Stroke.Tool.ADD_WATER, _water.to_global(at))
	var paused_during: bool = _water.paused
	for i in 10:
		_plugin.call("stroke_to", _water.to_global(at), 0.05)
		await process_frame
	_plugin.call("end_stroke")
	var after: PackedInt32Array = _water.get_water_region(_whole())
	var size: Vector2i = _water.grid_size
	var outside := 0
	for y in size.y:
		for x in size.x:
			var centre := Vector3((x + 0.5 - 0.5 * size.x) * _water.cell_size, 0,
					(y + 0.5 - 0.5 * size.y) * _water.cell_size)
			var i: int = y * size.x + x
			if centre.distance_to(at) > radius + _water.cell_size and before[i] != after[i]:
				outside += 1
	print("the stroke changed %d cells, %d of them farther than the brush's %.1f m" % [
			_differing(before, after), outside, radius])
	_check(paused_during, "the water is paused while the stroke is held")
	_check(outside == 0, "no cell beyond the brush changed during the stroke (%d did)" % outside)
	_check(not _water.paused, "the water runs again after the release")
	_water.simulate_in_editor = false
	_water.paused = was_paused
	_history().undo()
	await process_frame


func _test_a_paint_stroke_and_its_undo_restore_the_water_bit_for_bit() -> void:
	print("-- a stroke of the add-water brush, undone and redone through the editor's history")
	EditorInterface.edit_node(_water)
	await process_frame
	_check(_plugin.get("water") == _water and (_plugin.get("toolbar") as Control).visible,
			"selecting the PipeWater gives it to the plugin and shows the toolbar")
	var toolbar: Control = _plugin.get("toolbar")
	toolbar.set("radius", 3.0)
	toolbar.set("strength", 0.5)
	var before: PackedInt32Array = _water.get_water_region(_whole())
	var history := _history()
	var version: int = history.get_version()
	_plugin.call("begin_stroke", _water, Stroke.Tool.ADD_WATER, _water.to_global(Vector3(-6, 0, 0)))
	for x in [-5.0, -3.0, -1.0, 1.0]:
		_plugin.call("stroke_to", _water.to_global(Vector3(x, 0, 1)), 0.25)
	_plugin.call("begin_stroke", _water, Stroke.Tool.REMOVE_WATER, _water.to_global(Vector3(8, 0, -4)))
	_plugin.call("stroke_to", _water.to_global(Vector3(8, 0, -4)), 0.5)
	_check(_plugin.call("end_stroke"), "a stroke that changed the water ends in the history")
	var after: PackedInt32Array = _water.get_water_region(_whole())
	print("two strokes changed %d of %d cells; the history went from version %d to %d (%s)" % [
			_differing(before, after), before.size(), version, history.get_version(),
			history.get_current_action_name()])
	_check(history.get_version() == version + 2, "each stroke is one step of the undo history")
	history.undo()
	history.undo()
	var undone: PackedInt32Array = _water.get_water_region(_whole())
	_check(undone == before, "undoing both restores the depth field bit for bit (%d cells differ)"
			% _differing(before, undone))
	_ledger_balances("after the undo")
	history.redo()
	history.redo()
	var redone: PackedInt32Array = _water.get_water_region(_whole())
	_check(redone == after, "redoing both gives the strokes' water back bit for bit (%d differ)"
			% _differing(after, redone))
	_ledger_balances("after the redo")


func _test_a_stroke_from_the_viewport_is_one_undo_step() -> void:
	print("-- a stroke through the 3D viewport's input: press, hold, release")
	var camera := Camera3D.new()
	root.add_child(camera)
	camera.look_at_from_position(_water.to_global(Vector3(0, 30, 0)), _water.global_position,
			Vector3.FORWARD)
	var toolbar: Control = _plugin.get("toolbar")
	toolbar.call("choose", Stroke.Tool.ADD_WATER)
	var centre: Vector2 = camera.get_viewport().get_visible_rect().size / 2.0
	var picked: Variant = _plugin.call("pick", camera, centre)
	print("the viewport's centre picks %s; the surface there is at %.4f m" % [picked,
			_water.get_height(_water.global_position)])
	var surface: float = _water.get_height(_water.global_position)
	_check(picked is Vector3 and absf((picked as Vector3).y - surface) < 1.0e-3,
			"the mouse picks the water surface under it")
	var before: PackedInt32Array = _water.get_water_region(_whole())
	var depth: float = _cell_depth(0.0, 0.0)
	var history := _history()
	var version: int = history.get_version()
	var press := InputEventMouseButton.new()
	press.button_index = MOUSE_BUTTON_LEFT
	press.pressed = true
	press.position = centre
	var consumed: int = _plugin._forward_3d_gui_input(camera, press)
	_plugin.call("_process", 0.5)
	var release := press.duplicate() as InputEventMouseButton
	release.pressed = false
	_plugin._forward_3d_gui_input(camera, release)
	var now: float = _cell_depth(0.0, 0.0)
	print("depth under the mouse %.4f -> %.4f m; history version %d -> %d (%s)" % [depth, now,
			version, history.get_version(), history.get_current_action_name()])
	_check(consumed == EditorPlugin.AFTER_GUI_INPUT_STOP,
			"the brush takes the click from the viewport")
	_check(now > depth + 0.1, "holding the button for 0.5 s at 0.5 m/s adds water under the mouse")
	_check(history.get_version() == version + 1
			and history.get_current_action_name() == "PipeWater: add water",
			"press to release is one undo step named after its brush")
	history.undo()
	_check(_water.get_water_region(_whole()) == before, "its undo restores the water bit for bit")
	toolbar.call("choose", Stroke.Tool.NONE)
	_check(_plugin._forward_3d_gui_input(camera, press) == EditorPlugin.AFTER_GUI_INPUT_PASS,
			"with no brush chosen the viewport keeps its clicks")
	camera.free()


func _test_terrain_strokes_and_a_fill_undo_exactly() -> void:
	print("-- raise, smooth and fill strokes, undone")
	var terrain: PackedFloat32Array = _water.get_terrain_region(_whole())
	var water: PackedInt32Array = _water.get_water_region(_whole())
	var history := _history()
	for brush: Stroke.Tool in [Stroke.Tool.RAISE, Stroke.Tool.SMOOTH, Stroke.Tool.LOWER]:
		_plugin.call("begin_stroke", _water, brush, _water.to_global(Vector3(12, 0, 3)))
		_plugin.call("stroke_to", _water.to_global(Vector3(14, 0, 3)), 0.5)
		_plugin.call("end_stroke")
	var shaped: PackedFloat32Array = _water.get_terrain_region(_whole())
	_check(shaped != terrain, "the terrain brushes changed the ground")
	_check(_water.get_water_region(_whole()) == water, "and kept every depth")
	for i in 3:
		history.undo()
	var ground: PackedFloat32Array = _water.get_terrain_region(_whole())
	var differ := 0
	for i in terrain.size():
		if ground[i] != terrain[i]:
			differ += 1
	_check(differ == 0, "undoing them restores the terrain exactly (%d heights differ)" % differ)
	# A bank 18 m from the bowl's centre, above the pond: the fill raises the pond to it.
	var bank := _water.to_global(Vector3(18, 0, 0))
	bank.y = _water.get_terrain_height(bank)
	var level: float = _water.to_local(bank).y
	var before: float = _cell_surface(0.0, 0.0)
	_plugin.call("begin_stroke", _water, Stroke.Tool.FILL, bank)
	_plugin.call("end_stroke")
	var after: float = _cell_surface(0.0, 0.0)
	print("filling to the bank at local %.4f m: the pond's surface %.4f -> %.4f m" % [level,
			before, after])
	_check(level > before + 0.25 and absf(after - level) < 1.0e-4,
			"the fill raises the pond to the clicked bank")
	history.undo()
	_check(_water.get_water_region(_whole()) == water, "its undo restores the water bit for bit")
	_ledger_balances("after the terrain strokes and the fill")


func _test_a_bake_survives_saving_and_reloading_the_scene() -> void:
	print("-- Bake, save the scene, load it again")
	_plugin.call("begin_stroke", _water, Stroke.Tool.ADD_WATER, _water.to_global(Vector3(4, 0, 4)))
	_plugin.call("stroke_to", _water.to_global(Vector3(4, 0, 4)), 0.5)
	_plugin.call("end_stroke")
	_steps(30)
	var painted: PackedInt32Array = _water.get_water_region(_whole())
	var terrain: PackedFloat32Array = _water.get_terrain_region(_whole())
	var total: float = _water.get_total_water()
	var error: int = _plugin.call("bake", _water)
	var baked: PipeWaterState = _water.initial_state
	var expected_path := SCENE_DIR + "/pond_Water.res"
	_check(error == OK and baked != null and baked.resource_path == expected_path,
			"Bake stores the water in initial_state, saved as %s (error %d, path %s)" % [
			expected_path, error, baked.resource_path if baked != null else "none"])
	if baked == null:
		return
	_check(FileAccess.file_exists(expected_path), "the file exists beside the scene")
	_check(_water.get_water_region(_whole()) == painted,
			"the water after the bake is the water as it stood, to the quantum")
	_check(EditorInterface.save_scene() == OK, "the editor saves the scene")
	var text := FileAccess.get_file_as_string(SCENE_PATH)
	_check(text.contains("initial_state = ExtResource(") and text.contains("pond_Water.res"),
			"the scene refers to the baked water (%d characters of text)" % text.length())
	var from_disk := ResourceLoader.load(expected_path, "", ResourceLoader.CACHE_MODE_IGNORE) \
			as PipeWaterState
	_check(from_disk != null and from_disk.data == baked.data,
			"the file holds the baked bytes (%d)" % baked.data.size())
	var packed := ResourceLoader.load(SCENE_PATH, "", ResourceLoader.CACHE_MODE_IGNORE) as PackedScene
	var again: Node3D = packed.instantiate() if packed != null else null
	_check(again != null, "the saved scene loads again")
	if again == null:
		return
	root.add_child(again)
	var reloaded: PipeWater = again.get_node("Water")
	var depth: PackedInt32Array = reloaded.get_water_region(_whole())
	var ledger: Dictionary = reloaded.get_water_ledger()
	var quantum: float = reloaded.get_depth_quantum() * reloaded.cell_size * reloaded.cell_size
	print("baked %.6f m³; the reloaded scene starts with %.6f m³ (ledger initial %.6f m³)" % [
			total, reloaded.get_total_water(), ledger["initial"]])
	_check(depth == painted, "the reloaded scene starts from the baked depths bit for bit")
	_check(reloaded.get_terrain_region(_whole()) == terrain, "and the baked terrain")
	_check(absf(ledger["initial"] - total) < 0.5 * quantum,
			"its run starts with the baked total water to the quantum")
	again.free()
	var history := _history()
	history.undo()
	_check(_water.initial_state == null, "the bake is one undo step: undone, initial_state is empty")
	history.redo()
	_check(_water.initial_state != null and _water.initial_state.data == baked.data,
			"and redone, the baked water is back")


func _test_bad_values_are_refused_with_their_ranges() -> void:
	print("-- bad values (each should print a PipeWaterSource or PipeWater error)")
	var source := PipeWaterSource.new()
	_water.add_child(source)
	var cases: Array = [["rate", NAN, "-1000000 ..= 1000000 m³/s"], ["rate", INF, "1000000"],
			["radius", -1.0, "0 ..= 10000 m"], ["radius", NAN, "0 ..= 10000 m"]]
	for case: Array in cases:
		var kept: float = source.get(case[0])
		source.clear_last_error()
		source.set(case[0], case[1])
		var message := source.get_last_error()
		_check(source.get(case[0]) == kept and message.contains(case[0]) and message.contains(case[2]),
				"%s = %s is refused, %s %s kept: \"%s\"" % [case[0], case[1], case[0], kept, message])
	source.free()
	var small: PipeWater = ClassDB.instantiate(&"PipeWater")
	small.grid_size = Vector2i(16, 16)
	small.show_mesh = false
	root.add_child(small)
	var other_grid: PipeWaterState = small.save_state()
	small.free()
	var kept_state: PipeWaterState = _water.initial_state
	var total: float = _water.get_total_water()
	_water.clear_last_error()
	_water.initial_state = other_grid
	var message := _water.get_last_error()
	_check(_water.initial_state == kept_state and message.contains("initial_state")
			and message.contains("16 × 16") and message.contains("grid_size (48, 32)"),
			"a state of another grid is refused, naming both grids: \"%s\"" % message)
	_near(_water.get_total_water(), total, 0.0, "and the water is kept")


func _test_the_source_gizmo() -> void:
	print("-- the source's gizmo")
	var gizmo: EditorNode3DGizmoPlugin = _plugin.get("_gizmo")
	var source := PipeWaterSource.new()
	var plain := Node3D.new()
	_check(gizmo != null and gizmo._has_gizmo(source) and not gizmo._has_gizmo(plain),
			"the plugin draws PipeWaterSource nodes, and only them")
	plain.free()
	_water.add_child(source)
	source.owner = _root
	for i in 5:
		await process_frame
	var gizmos: Array = source.get_gizmos()
	print("a source in the edited scene has %d gizmos" % gizmos.size())
	_check(gizmos.size() >= 1, "the editor gives a source in the edited scene its gizmo")
	source.free()
