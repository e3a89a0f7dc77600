extends "res://tests/test_base.gd"
## The addon's pages in the editor's class reference (F1), read from a running editor.
##
## Runs inside the editor, headless, after an import (cargo xtask test does this for every
## Godot binary given):
## [codeblock]
## $GODOT --headless --path godot_project --import
## $GODOT --headless --editor --path godot_project -s res://tests/test_class_reference.gd
## [/codeblock]
## With --editor this script is the editor's SceneTree: it asks the script editor to show each
## class's help page, as F1 does, and reads the page's text. The descriptions of PipeWater,
## PipeWaterState and PipeWaterSource come from the Rust doc comments, which godot-rust hands
## to the editor (cargo feature register-docs). (BuoyancyProbe's page, from its ## comments,
## is the editor's own work on script classes and is left out: Godot 4.3 does not open it
## here, printing "No loader found for resource: res://addons/pipe_water/buoyancy_probe.gd
## (expected type: BuoyancyProbe)".) Godot merges an extension's
## pages into its documentation only when it reads its documentation cache: in the one session
## that (re)builds that cache (the first start of a Godot version with an empty cache, which the
## import before this run does) the pages show no descriptions.
##
## Every check prints the item it compared; the run ends with PIPEWATER TESTS PASSED or
## PIPEWATER TESTS FAILED.

## What the class reference says where a class, property or method has no description.
const PLACEHOLDER := "There is currently no description for this"
## Pages to check, and the sections each must show.
const PAGES := {
	"PipeWater": ["Description", "Properties", "Methods", "Signals", "Constants",
			"Property Descriptions", "Method Descriptions"],
	"PipeWaterState": ["Description", "Properties", "Methods", "Property Descriptions",
			"Method Descriptions"],
	"PipeWaterSource": ["Description", "Properties", "Methods", "Property Descriptions",
			"Method Descriptions"],
	"PipeWaterWorld": ["Description", "Properties", "Methods", "Signals",
			"Property Descriptions", "Method Descriptions"],
}
## Words each page must show: the editor tools and what they work with.
const REQUIRED_TEXT := {
	"PipeWater": ["Authoring in the editor", "initial_state", "paint_water", "get_water_changes",
			"set_water_region", "fill_to_shore", "intersect_ray", "save_state_async",
			"load_state_file_async", "state_loaded"],
	"PipeWaterState": ["initial_state", "get_total_water"],
	"PipeWaterSource": ["spring", "drain", "source_id", "simulate_in_editor"],
	"PipeWaterWorld": ["far_water_cells", "far_water_stride", "far_water_levels", "far_height_texture",
			"far_flux_texture", "get_far_height_image", "focus_nodes", "save_state_async",
			"terrain_source", "terrain_read_budget_ms", "is_terrain_source_read"],
}
## Seconds a page may take to appear.
const PAGE_TIMEOUT := 60.0
## Seconds between requests for a page that has not appeared (the editor ignores requests
## while it is still starting).
const ASK_AGAIN := 2.0

var _pending: Array = PAGES.keys()
var _asked := ""
var _asked_at := 0.0
var _last_ask := 0.0
var _started := false


func _process(_delta: float) -> bool:
	if not _started:
		_started = true
		print("PipeWater class reference tests, Godot %s" % Engine.get_version_info().string)
		if not Engine.is_editor_hint():
			_check(false, "the script runs inside the editor (run it with --editor)")
			_finish()
			return true
	var editor := EditorInterface.get_script_editor()
	if editor == null or EditorInterface.get_resource_filesystem().is_scanning():
		return false
	var now := Time.get_ticks_msec() / 1000.0
	if _asked == "":
		if _pending.is_empty():
			_finish()
			return true
		_asked = _pending.pop_front()
		_asked_at = now
		_last_ask = -INF
		print("-- the class reference page of %s" % _asked)
	var page := _page_text(editor, _asked)
	if page != "":
		_check_page(_asked, page)
		_asked = ""
	elif now - _asked_at > PAGE_TIMEOUT:
		_check(false, "the editor shows a page for %s within %d s" % [_asked, PAGE_TIMEOUT])
		_asked = ""
	elif now - _last_ask > ASK_AGAIN:
		editor.goto_help("class_name:" + _asked)
		_last_ask = now
	return false


## The text of the help page of [param name] open in the script editor; "" while there is none.
func _page_text(editor: ScriptEditor, name: String) -> String:
	for help: Node in editor.find_children("*", "EditorHelp", true, false):
		for label: Node in help.find_children("*", "RichTextLabel", true, false):
			# Godot 4.6 puts no-break spaces between "Class:" and the name.
			var text: String = (label as RichTextLabel).get_parsed_text().replace("\u00a0", " ")
			var first := text.strip_edges().get_slice("\n", 0)
			if first.begins_with("Class:") and first.trim_prefix("Class:").strip_edges() == name:
				return text
	return ""


func _check_page(name: String, page: String) -> void:
	var lines := page.split("\n")
	# The brief description is the first line after "Class:" and "Inherits:".
	var brief := ""
	for line: String in lines.slice(1):
		var text := line.strip_edges()
		if text != "" and not text.begins_with("Inherits:"):
			brief = text
			break
	_check(brief != "" and not brief.contains(PLACEHOLDER),
			"%s has a brief description: \"%s\"" % [name, brief.left(100)])
	var headings: Array[String] = []
	for line: String in lines:
		if line == line.strip_edges() and line != "":
			headings.append(line)
	for section: String in PAGES[name]:
		_check(section in headings, "%s's page has a \"%s\" section" % [name, section])
	for words: String in REQUIRED_TEXT.get(name, []):
		_check(page.contains(words), "%s's page speaks of %s" % [name, words])
	var missing := page.count(PLACEHOLDER)
	_check(missing == 0, "%s's page has %d placeholders \"%s …\" (%d characters of text)" % [
			name, missing, PLACEHOLDER, page.length()])
	# Each property's entry under "Property Descriptions": "● <type><name> …" and its text.
	var described := page.get_slice("Property Descriptions", 1).get_slice("Method Descriptions", 0)
	var entries := described.split("●", false).slice(1)
	var empty: Array[String] = []
	for entry: String in entries:
		var header := entry.strip_edges().get_slice("\n", 0)
		var body := entry.strip_edges().trim_prefix(header).strip_edges()
		if body == "" or body.contains(PLACEHOLDER):
			empty.append(header)
	var properties := 0
	if ClassDB.class_exists(name):
		for property: Dictionary in ClassDB.class_get_property_list(name, true):
			var heading := PROPERTY_USAGE_GROUP | PROPERTY_USAGE_SUBGROUP | PROPERTY_USAGE_CATEGORY
			if not (property["usage"] & heading):
				properties += 1
	var all_described := properties == 0 or entries.size() == properties
	_check(entries.size() > 0 and all_described and empty.is_empty(),
			"%s: %d property descriptions for %s properties, none empty (empty: %s)" % [
				name, entries.size(), properties if properties > 0 else "its", empty])


