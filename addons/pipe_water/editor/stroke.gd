@tool
extends RefCounted
## One stroke of a PipeWater brush in the editor, on a [PipeWater] or a [PipeWaterWorld], from
## the press of the mouse button to its release: the dabs it makes, and the undo payload it
## leaves.
##
## On a [PipeWater], the stroke reads the field its tool changes (the water depths, or the
## terrain heights) over the whole grid when it starts; when it ends, [method finish] asks the
## water what changed since ([method PipeWater.get_water_changes]). A world is too large to read
## whole: the stroke opens a change record instead ([method PipeWaterWorld.begin_change_record]),
## in which each dab first keeps the blocks of cells it is about to change, and
## [method PipeWaterWorld.finish_change_record] compares those. Either way the stroke returns the
## smallest rectangle of cells holding every change, with its values before and after. Those are
## exact (depths in quanta, heights bit for bit), so [code]set_water_region[/code] with
## [code]before[/code] undoes the stroke exactly and with [code]after[/code] redoes it, and the
## ledger counts both as water added or removed.
##
## The water does not flow from the press to the release (a grid is paused, then runs again if
## it ran before; a world does not step while its record is open), also with
## [code]simulate_in_editor[/code] on: the stroke's change is then the brush's alone, so its
## payload is the rectangle the brush covered (not all the water that moved meanwhile, up to
## 128 MiB at 4096² cells) and undoing it takes back the paint without rewinding the flow.

## The brushes. [constant FILL] acts once, where the stroke starts.
enum Tool { NONE, ADD_WATER, REMOVE_WATER, FILL, RAISE, LOWER, SMOOTH }

## What the undo history calls each tool's stroke.
const ACTION_NAMES := {
	Tool.ADD_WATER: "PipeWater: add water",
	Tool.REMOVE_WATER: "PipeWater: remove water",
	Tool.FILL: "PipeWater: fill a basin",
	Tool.RAISE: "PipeWater: raise terrain",
	Tool.LOWER: "PipeWater: lower terrain",
	Tool.SMOOTH: "PipeWater: smooth terrain",
}

## The water painted on: a [PipeWater] or a [PipeWaterWorld].
var water: Node3D
## The brush.
var tool: Tool = Tool.NONE
## Radius of the brush, m.
var radius: float = 4.0
## Metres per second at the brush's centre (water added or removed, ground raised or lowered);
## for [constant SMOOTH] the share of the way to the neighbourhood's mean per second.
var strength: float = 1.0
## The global point the brush is over, or null while the mouse is off the water and ground.
var point: Variant = null

var _before: Variant
var _was_paused := false


## Starts a stroke of [param brush] on [param on_water] at the global point [param at]: reads the
## field the brush changes, and fills the basin at once for [constant FILL].
func _init(on_water: Node3D, brush: Tool, brush_radius: float, brush_strength: float,
		at: Vector3) -> void:
	water = on_water
	tool = brush
	radius = brush_radius
	strength = brush_strength
	point = at
	if water is PipeWaterWorld:
		(water as PipeWaterWorld).begin_change_record()
	else:
		_was_paused = water.paused
		water.paused = true
		var whole := Rect2i(Vector2i.ZERO, water.grid_size)
		if changes_terrain(tool):
			_before = water.get_terrain_region(whole)
		else:
			_before = water.get_water_region(whole)
	if tool == Tool.FILL:
		water.fill_to_shore(at)


## Whether [param brush] changes the terrain (else the water).
static func changes_terrain(brush: Tool) -> bool:
	return brush == Tool.RAISE or brush == Tool.LOWER or brush == Tool.SMOOTH


## One dab at [member point] for [param delta] seconds of holding the button.
func apply(delta: float) -> void:
	if point == null or tool == Tool.FILL or delta <= 0.0:
		return
	var amount: float = strength * delta
	match tool:
		Tool.ADD_WATER:
			water.paint_water(point, amount, radius)
		Tool.REMOVE_WATER:
			water.paint_water(point, -amount, radius)
		Tool.RAISE:
			water.modify_terrain(point, amount, radius)
		Tool.LOWER:
			water.modify_terrain(point, -amount, radius)
		Tool.SMOOTH:
			water.smooth_terrain(point, minf(amount, 1.0), radius)


## Ends the stroke: [code]{name, method, region, before, after}[/code] for the undo history
## ([code]method[/code] is the node's setter for [code]region[/code]), or an empty Dictionary
## when the stroke changed nothing.
func finish() -> Dictionary:
	var changes: Dictionary
	if water is PipeWaterWorld:
		var recorded := (water as PipeWaterWorld).finish_change_record()
		changes = recorded.get("terrain" if changes_terrain(tool) else "water", {})
	elif changes_terrain(tool):
		changes = water.get_terrain_changes(_before)
	else:
		changes = water.get_water_changes(_before)
	_before = null
	if water is PipeWater:
		water.paused = _was_paused
	if changes.is_empty() or not (changes["region"] as Rect2i).has_area():
		return {}
	changes["name"] = ACTION_NAMES[tool]
	changes["method"] = &"set_terrain_region" if changes_terrain(tool) else &"set_water_region"
	return changes
