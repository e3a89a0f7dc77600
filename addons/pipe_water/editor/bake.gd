@tool
extends RefCounted
## Water baked into a scene: where the editor's "Bake" stores a [PipeWater]'s water, and how.
##
## A [PipeWaterState] holds about 24 bytes a cell, too much for a text scene, so it lives in a
## binary resource beside the scene, [code]<scene>_<node path>.res[/code] (for
## [code]res://levels/valley.tscn[/code] and a node [code]Water[/code]:
## [code]res://levels/valley_Water.res[/code]), saved with [constant ResourceSaver.FLAG_COMPRESS],
## and the scene refers to it through [member PipeWater.initial_state].

## Flags the state is saved with: compressed (Zstandard, as Godot compresses binary resources).
const SAVE_FLAGS := ResourceSaver.FLAG_COMPRESS


## The file beside [param scene_path] that holds the baked water of the node at
## [param node_path] (relative to the scene's root; [code].[/code] for the root itself, named
## [param node_name]).
static func path_for(scene_path: String, node_path: NodePath, node_name: String) -> String:
	var key := String(node_path)
	if key == "" or key == ".":
		key = node_name
	key = key.replace("/", "_").validate_filename()
	return "%s_%s.res" % [scene_path.get_basename(), key]


## Saves [param state] as [param path] (compressed) and makes it the resource of that path, so
## that a scene saved with it refers to the file. Returns the saver's error.
static func store(state: PipeWaterState, path: String) -> Error:
	var error := ResourceSaver.save(state, path, SAVE_FLAGS)
	if error == OK:
		state.take_over_path(path)
	return error
