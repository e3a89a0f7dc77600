extends Node3D
## A stand-in for Terrain3D 1.0 (checked by hand against 1.1.0-dev, commit fc7a744;
## TokisanGames/Terrain3D, doc/doc_classes/Terrain3D.xml, Terrain3DData.xml,
## Terrain3DRegion.xml), written from its class documentation: the node's
## [code]data[/code], [code]region_size[/code] and [code]vertex_spacing[/code]; the data's
## regions (each with its [code]location[/code], a [code]FORMAT_RF[/code] height map of
## region_size² pixels, one a vertex, and a control map whose bit 2 marks a hole), its 32×32
## region map, [code]get_height[/code] (NaN in holes and outside regions), [code]set_height[/code],
## [code]update_maps[/code] and the [code]maps_edited(AABB)[/code] signal. The world is anchored
## at the origin: vertex (u, v) lies at global (u × vertex_spacing, v × vertex_spacing).

const RegionStandIn := preload("res://tests/stand_ins/terrain3d_region_stand_in.gd")
const DataStandIn := preload("res://tests/stand_ins/terrain3d_data_stand_in.gd")

## Vertices on a region's side (Terrain3D.RegionSize: 64 ..= 2048 there; any here).
var region_size: int = 64
## Metres between vertices.
var vertex_spacing: float = 1.0
## The maps.
var data: Object


func _init(size: int, spacing: float) -> void:
	region_size = size
	vertex_spacing = spacing
	data = DataStandIn.new(size, spacing)


func _notification(what: int) -> void:
	if what == NOTIFICATION_PREDELETE and data != null:
		data.free()


func get_region_size() -> int:
	return region_size


func get_vertex_spacing() -> float:
	return vertex_spacing


func get_data() -> Object:
	return data
