extends "res://tests/test_base.gd"
## Headless tests of what the editor shows of the addon: the registered classes, the inspector's
## groups, range and enum hints, and the icons.
##
## Run after importing the project (cargo xtask test does both, for every Godot binary given):
## [codeblock]
## $GODOT --headless --path godot_project --import
## $GODOT --headless --path godot_project -s res://tests/test_editor_surface.gd
## [/codeblock]
## Everything here is read through ClassDB, ProjectSettings and the resource loader, as the
## inspector and the scene dock read it. The class reference pages are checked by xtask with
## --doctool (they are only visible to the editor). Every check prints the item it compared; the
## run ends with PIPEWATER TESTS PASSED or PIPEWATER TESTS FAILED.

const EXTENSION_PATH := "res://addons/pipe_water/pipe_water.gdextension"
const PLUGIN_CONFIG_PATH := "res://addons/pipe_water/plugin.cfg"
const PROBE_SCRIPT_PATH := "res://addons/pipe_water/buoyancy_probe.gd"

## The inspector group of every property the PipeWater inspector shows, in the order shown.
const PIPE_WATER_GROUPS := {
	"grid_size": "Grid", "cell_size": "Grid",
	"heightmap": "Terrain", "height_scale": "Terrain", "height_offset": "Terrain",
	"terrain_source": "Terrain", "terrain_holes": "Terrain", "terrain_write_back": "Terrain",
	"initial_water_level": "Water", "initial_state": "Water", "gravity": "Water",
	"damping": "Water",
	"neighbour_mode": "Water", "cross_section": "Water", "momentum_advection": "Water",
	"pipe_depth": "Water", "erosion": "Water", "fluid": "Water",
	"time_scale": "Time", "max_substeps": "Time", "max_step": "Time", "courant": "Time",
	"paused": "Time", "simulate_in_editor": "Time",
	"boundary_north": "Boundaries", "boundary_east": "Boundaries",
	"boundary_south": "Boundaries", "boundary_west": "Boundaries",
	"inflow_rate_north": "Boundaries", "inflow_rate_east": "Boundaries",
	"inflow_rate_south": "Boundaries", "inflow_rate_west": "Boundaries",
	"boundary_level_north": "Boundaries", "boundary_level_east": "Boundaries",
	"boundary_level_south": "Boundaries", "boundary_level_west": "Boundaries",
	"backend": "Backend", "can_sleep": "Backend",
	"show_mesh": "Rendering", "water_material": "Rendering", "update_textures": "Rendering",
	"half_float_textures": "Rendering",
	"detail_waves": "Detail Waves", "detail_subdivision": "Detail Waves",
	"detail_window": "Detail Waves", "detail_max_celerity": "Detail Waves",
	"detail_damping": "Detail Waves", "detail_hull_strength": "Detail Waves",
	"rain_rate": "Detail Waves", "rain_drop_height": "Detail Waves",
	"detail_follow": "Detail Waves",
	"multiplayer_sync": "Multiplayer", "sync_budget_kbps": "Multiplayer",
	"sync_focus_nodes": "Multiplayer", "allow_client_edits": "Multiplayer",
}
## The class constants each enum property's values must match.
const ENUM_CONSTANT_PREFIXES := {
	"neighbour_mode": "NEIGHBOURS_", "cross_section": "CROSS_SECTION_", "backend": "BACKEND_",
	"terrain_holes": "TERRAIN_HOLES_",
	"boundary_north": "BOUNDARY_", "boundary_east": "BOUNDARY_", "boundary_south": "BOUNDARY_",
	"boundary_west": "BOUNDARY_",
}
## Properties scripts read but the inspector must not offer for editing.
const READ_ONLY := ["active_backend", "height_texture", "flux_texture", "detail_texture"]


func _initialize() -> void:
	_run.call_deferred()


func _run() -> void:
	print("PipeWater editor surface tests, Godot %s" % Engine.get_version_info().string)
	_test_the_extension_and_its_classes_are_registered()
	if ClassDB.class_exists(&"PipeWater"):
		_test_pipe_water_properties_sit_in_inspector_groups()
		_test_numeric_properties_carry_ranges_the_node_accepts(&"PipeWater", 19,
				"grid, terrain, water, time and edges")
		_test_enum_properties_list_the_class_constants()
		_test_read_only_properties_have_no_setter(&"PipeWater", READ_ONLY)
	if ClassDB.class_exists(&"PipeWaterSource"):
		_test_numeric_properties_carry_ranges_the_node_accepts(&"PipeWaterSource", 2,
				"rate and radius")
		_test_read_only_properties_have_no_setter(&"PipeWaterSource", ["source_id"])
	_test_the_editor_plugin_is_enabled()
	if ClassDB.class_exists(&"PipeWaterState"):
		_test_the_state_resource_stores_its_bytes()
	_test_the_icons_load_as_textures()
	_test_the_buoyancy_probe_script_class()
	_finish()


func _test_the_extension_and_its_classes_are_registered() -> void:
	print("-- the extension and its classes")
	var loaded: PackedStringArray = GDExtensionManager.get_loaded_extensions()
	_check(EXTENSION_PATH in loaded, "GDExtensionManager has loaded %s (loaded: %s)" % [
			EXTENSION_PATH, loaded])
	for pair: Array in [["PipeWater", "Node3D"], ["PipeWaterState", "Resource"],
			["PipeWaterSource", "Node3D"]]:
		var name: StringName = pair[0]
		var exists := ClassDB.class_exists(name)
		_check(exists, "ClassDB has the class %s" % name)
		if not exists:
			continue
		var parent: StringName = ClassDB.get_parent_class(name)
		_check(parent == StringName(pair[1]), "%s extends %s (got %s)" % [name, pair[1], parent])
		_check(ClassDB.can_instantiate(name),
				"%s can be instantiated (the Create dialog offers it)" % name)
	var config := ConfigFile.new()
	var err := config.load(EXTENSION_PATH)
	_check(err == OK, "%s parses as a config file (error %d)" % [EXTENSION_PATH, err])
	var minimum: String = str(config.get_value("configuration", "compatibility_minimum", ""))
	var info: Dictionary = Engine.get_version_info()
	var running := "%d.%d" % [info["major"], info["minor"]]
	_check(minimum != "" and _version_at_least(running, minimum),
			"compatibility_minimum %s ≤ the running Godot %s" % [minimum, running])


func _version_at_least(version: String, minimum: String) -> bool:
	var a := version.split(".")
	var b := minimum.split(".")
	for i in maxi(a.size(), b.size()):
		var x := int(a[i]) if i < a.size() else 0
		var y := int(b[i]) if i < b.size() else 0
		if x != y:
			return x > y
	return true


## A class's own properties (PipeWater's unless told) as the inspector lists them, each with the
## group and subgroup heading it stands under ("" when none).
func _inspector_properties(of_class: StringName = &"PipeWater") -> Array[Dictionary]:
	var listed: Array[Dictionary] = []
	var group := ""
	var subgroup := ""
	for property: Dictionary in ClassDB.class_get_property_list(of_class, true):
		var usage: int = property["usage"]
		if usage & PROPERTY_USAGE_GROUP:
			group = property["name"]
			subgroup = ""
		elif usage & PROPERTY_USAGE_SUBGROUP:
			subgroup = property["name"]
		elif usage & PROPERTY_USAGE_EDITOR:
			var entry := property.duplicate()
			entry["group"] = group
			entry["subgroup"] = subgroup
			listed.append(entry)
	return listed


func _test_pipe_water_properties_sit_in_inspector_groups() -> void:
	print("-- PipeWater's inspector groups")
	var shown := {}
	var groups: Array[String] = []
	for property: Dictionary in _inspector_properties():
		var name: String = property["name"]
		shown[name] = property["group"]
		if property["group"] not in groups:
			groups.append(property["group"])
		var expected: String = PIPE_WATER_GROUPS.get(name, "<none: not expected in the inspector>")
		_check(property["group"] == expected,
				"%s is shown under \"%s\" (expected \"%s\")" % [name, property["group"], expected])
	print("   groups in order: %s" % [groups])
	_check(groups == ["Grid", "Terrain", "Water", "Time", "Boundaries", "Backend", "Rendering",
			"Detail Waves", "Multiplayer"], "the groups come in the order Grid, Terrain, Water, Time, "
			+ "Boundaries, Backend, Rendering, Detail Waves, Multiplayer")
	var missing: Array[String] = []
	for name: String in PIPE_WATER_GROUPS:
		if not shown.has(name):
			missing.append(name)
	_check(missing.is_empty(), "every expected property is in the inspector (missing: %s)" % [missing])


## [min, max, step] and the flags of a PROPERTY_HINT_RANGE hint string such as
## "0.001,100,0.001,or_greater,suffix:m".
func _parse_range(hint_string: String) -> Dictionary:
	var parts := hint_string.split(",")
	var valid := parts.size() >= 2 and parts[0].is_valid_float() and parts[1].is_valid_float()
	var parsed := {"valid": valid}
	if not parsed["valid"]:
		return parsed
	parsed["min"] = parts[0].to_float()
	parsed["max"] = parts[1].to_float()
	parsed["step"] = parts[2].to_float() if parts.size() > 2 and parts[2].is_valid_float() else 1.0
	parsed["or_greater"] = "or_greater" in parts
	parsed["or_less"] = "or_less" in parts
	return parsed


func _test_numeric_properties_carry_ranges_the_node_accepts(of_class: StringName,
		at_least: int, which: String) -> void:
	print("-- range hints of %s's numbers (default inside, both ends accepted by the node)" % of_class)
	var node: Node = ClassDB.instantiate(of_class)
	var numbers := 0
	for property: Dictionary in _inspector_properties(of_class):
		var type: int = property["type"]
		if type != TYPE_FLOAT and type != TYPE_INT:
			continue
		var name: String = property["name"]
		if ENUM_CONSTANT_PREFIXES.has(name):
			continue
		numbers += 1
		var hint_string: String = property["hint_string"]
		var bounds := _parse_range(hint_string)
		_check(property["hint"] == PROPERTY_HINT_RANGE and bounds["valid"],
				"%s has a range hint (hint %d, \"%s\")" % [name, property["hint"], hint_string])
		if property["hint"] != PROPERTY_HINT_RANGE or not bounds["valid"]:
			continue
		_check(bounds["min"] < bounds["max"] and bounds["step"] > 0.0
				and bounds["step"] <= bounds["max"] - bounds["min"],
				"%s: min %s < max %s, step %s > 0 and within the span" % [
					name, bounds["min"], bounds["max"], bounds["step"]])
		var default: float = node.get(name)
		var above_ok: bool = bounds["or_greater"] or default <= bounds["max"]
		var below_ok: bool = bounds["or_less"] or default >= bounds["min"]
		_check(above_ok and below_ok, "%s: the default %s is inside [%s, %s]%s%s" % [
				name, default, bounds["min"], bounds["max"],
				" or greater" if bounds["or_greater"] else "", " or less" if bounds["or_less"] else ""])
		for end: float in [bounds["min"], bounds["max"]]:
			node.call(&"clear_last_error")
			node.set(name, end)
			var now: float = node.get(name)
			_check(is_equal_approx(now, end) and node.call(&"get_last_error") == "",
					"%s: the node accepts the hint's end %s (reads %s, error \"%s\")" % [
						name, end, now, node.call(&"get_last_error")])
		node.set(name, default)
	_check(numbers >= at_least, "%d numeric properties of %s checked (at least the %d of %s)" % [
			numbers, of_class, at_least, which])
	node.free()


func _test_enum_properties_list_the_class_constants() -> void:
	print("-- enum hints of PipeWater's mode properties")
	var by_name := {}
	for property: Dictionary in _inspector_properties():
		by_name[property["name"]] = property
	for name: String in ENUM_CONSTANT_PREFIXES:
		if not by_name.has(name):
			_check(false, "%s is in the inspector" % name)
			continue
		var property: Dictionary = by_name[name]
		var hint_string: String = property["hint_string"]
		_check(property["hint"] == PROPERTY_HINT_ENUM and property["type"] == TYPE_INT,
				"%s is an int with an enum hint (type %d, hint %d: \"%s\")" % [
					name, property["type"], property["hint"], hint_string])
		var prefix: String = ENUM_CONSTANT_PREFIXES[name]
		var constants: Array[String] = []
		for constant: String in ClassDB.class_get_integer_constant_list(&"PipeWater", true):
			if constant.begins_with(prefix):
				constants.append(constant)
		var entries := hint_string.split(",", false)
		_check(entries.size() == constants.size() and entries.size() >= 2,
				"%s offers %d choices for the %d %s* constants" % [
					name, entries.size(), constants.size(), prefix])
		for entry: String in entries:
			var label := entry.get_slice(":", 0)
			var value := entry.get_slice(":", 1).to_int() if entry.contains(":") else -1
			var constant := prefix + label.to_snake_case().to_upper()
			var matches: bool = constant in constants and ClassDB.class_get_integer_constant(
					&"PipeWater", constant) == value
			_check(matches, "%s: \"%s\" = %d is %s" % [name, label, value, constant])


func _test_read_only_properties_have_no_setter(of_class: StringName, names: Array) -> void:
	print("-- read-only properties of %s" % of_class)
	var shown := _inspector_properties(of_class).map(func(p: Dictionary) -> String: return p["name"])
	var listed := ClassDB.class_get_property_list(of_class, true).map(
			func(p: Dictionary) -> String: return p["name"])
	for name: String in names:
		var getter := ClassDB.class_has_method(of_class, "get_" + name, true)
		var setter := ClassDB.class_has_method(of_class, "set_" + name, true)
		_check(name in listed and getter and not setter and name not in shown,
				"%s is a property (%s) with get_%s (%s), no set_%s (%s), not editable in the inspector (%s)" % [
					name, name in listed, name, getter, name, setter, name in shown])


func _test_the_editor_plugin_is_enabled() -> void:
	print("-- the editor plugin: %s" % PLUGIN_CONFIG_PATH)
	var config := ConfigFile.new()
	var err := config.load(PLUGIN_CONFIG_PATH)
	var script_name: String = config.get_value("plugin", "script", "")
	_check(err == OK and config.get_value("plugin", "name", "") == "PipeWater"
			and script_name == "editor/plugin.gd",
			"plugin.cfg parses (error %d) and names the plugin PipeWater and its script %s" % [
			err, script_name])
	var script_path := PLUGIN_CONFIG_PATH.get_base_dir().path_join(script_name)
	var script: Script = load(script_path) if ResourceLoader.exists(script_path) else null
	_check(script != null and script.is_tool() and script.get_instance_base_type() == &"EditorPlugin",
			"%s is a tool script extending EditorPlugin" % script_path)
	var enabled: PackedStringArray = ProjectSettings.get_setting("editor_plugins/enabled",
			PackedStringArray())
	_check(PLUGIN_CONFIG_PATH in enabled, "the demo project enables it (%s)" % [enabled])


func _test_the_state_resource_stores_its_bytes() -> void:
	print("-- PipeWaterState's stored properties")
	var stored := {}
	for property: Dictionary in ClassDB.class_get_property_list(&"PipeWaterState", true):
		if property["usage"] & PROPERTY_USAGE_STORAGE:
			stored[property["name"]] = property["type"]
	print("   stored: %s" % stored)
	_check(stored.get("data", -1) == TYPE_PACKED_BYTE_ARRAY, "data is a stored PackedByteArray")
	_check(stored.get("grid_size", -1) == TYPE_VECTOR2I, "grid_size is stored as a Vector2i")
	_check(stored.get("simulated_time", -1) == TYPE_FLOAT, "simulated_time is stored as a float")


func _test_the_icons_load_as_textures() -> void:
	print("-- the icons of the [icons] section of %s" % EXTENSION_PATH)
	var config := ConfigFile.new()
	config.load(EXTENSION_PATH)
	var classes: PackedStringArray = config.get_section_keys("icons") if config.has_section("icons") \
			else PackedStringArray()
	_check("PipeWater" in classes, "[icons] names an icon for PipeWater (%s)" % [classes])
	for name: String in classes:
		var path: String = config.get_value("icons", name, "")
		_check(ClassDB.class_exists(name), "[icons] %s names a registered class" % name)
		_check_icon(name, path)


func _check_icon(owner: String, path: String) -> void:
	_check(FileAccess.file_exists(path), "%s's icon %s exists" % [owner, path])
	var icon: Resource = load(path) if ResourceLoader.exists(path) else null
	var texture := icon as Texture2D
	_check(texture != null, "it loads as a Texture2D (%s)" % [icon.get_class() if icon else null])
	if texture != null:
		var size := Vector2i(texture.get_width(), texture.get_height())
		_check(size.x >= 16 and size.y >= 16 and size.x <= 128 and size.y <= 128,
				"it is %s pixels, the size of an editor icon" % size)


func _test_the_buoyancy_probe_script_class() -> void:
	print("-- BuoyancyProbe, the addon's script class")
	var entry := {}
	for item: Dictionary in ProjectSettings.get_global_class_list():
		if item["class"] == &"BuoyancyProbe":
			entry = item
	_check(not entry.is_empty(), "BuoyancyProbe is a global script class")
	if entry.is_empty():
		return
	_check(entry["path"] == PROBE_SCRIPT_PATH and entry["base"] == &"Node3D",
			"it is %s, extending %s" % [entry["path"], entry["base"]])
	var icon: String = entry.get("icon", "")
	_check(icon != "", "it names an icon (%s)" % icon)
	if icon != "":
		_check_icon("BuoyancyProbe", icon)
	var script: Script = load(PROBE_SCRIPT_PATH)
	var ranged: Array[String] = []
	for property: Dictionary in script.get_script_property_list():
		var type: int = property["type"]
		if not (property["usage"] & PROPERTY_USAGE_EDITOR) or (type != TYPE_FLOAT and type != TYPE_INT):
			continue
		var bounds := _parse_range(property["hint_string"])
		var ok: bool = property["hint"] == PROPERTY_HINT_RANGE and bounds["valid"] \
				and bounds["min"] < bounds["max"]
		_check(ok, "BuoyancyProbe.%s has a range hint (\"%s\")" % [
				property["name"], property["hint_string"]])
		ranged.append(property["name"])
	_check(ranged.size() >= 4, "%d numeric BuoyancyProbe properties checked: %s" % [
			ranged.size(), ranged])
