extends RefCounted
## The demo landscape, a line-by-line port of [code]demo_landscape[/code] in
## rust/pipewater-core/src/scenarios.rs (which [code]cargo xtask demo[/code] renders headless):
## a valley falling along local +X with a spring at its head, a dam of terrain across it holding
## back a reservoir, and a lake in a basin below. Hills come from diamond-square noise with the
## same SplitMix64 generator, so a seed gives the same hills here and there (to float rounding:
## GDScript computes in double precision, the Rust code in single).
##
## All heights are local metres; [param relief] is the height span of the terrain.
##
## [method generate_hills] is a second landscape, the demo's own (no Rust twin): the same
## diamond-square noise alone, as rolling hills whose hollows hold lakes and a spring on the
## highest ground.

## Fraction of the grid's width (local X) where the dam stands.
const DAM_U := 0.52
## Fall of the valley floor from the west edge to the east edge, in units of the relief.
const SLOPE := 0.30
## Height of the dam above the valley floor, in units of the relief.
const DAM_HEIGHT := 0.22
## Depth of the reservoir at the dam, in units of the relief.
const RESERVOIR_DEPTH := 0.17
## Amplitude of the diamond-square hills, in units of the relief.
const NOISE := 0.05
## Where along the valley (fraction of the width) the spring is.
const SOURCE_U := 0.06
## Where along the valley the reservoir is filled from, upstream of the dam.
const RESERVOIR_U := 0.44

# SplitMix64 constants as signed 64-bit integers (GDScript ints wrap on overflow).
const _GOLDEN := -7046029254386353131
const _MIX1 := -4658895280553007687
const _MIX2 := -7723592293110705685

## Terrain heights, row-major (index = y × width + x), local metres.
var heights := PackedFloat32Array()
## Water level of the reservoir behind the dam, local Y (m).
var reservoir_level: float = 0.0
## Water level of the lake (local Y, m): every cell below it starts filled (all of them lie
## downstream of the dam).
var lake_level: float = 0.0
## Height of the dam's crest on the river's centre line (local Y, m), noise left out.
var dam_crest: float = 0.0
## Local X, Z (m) of the dam on the river's centre line.
var dam_position := Vector2.ZERO
## Local X, Z (m) of the spring.
var source_position := Vector2.ZERO
## Local X, Z (m) of the point on the river's centre line the reservoir is filled from.
var reservoir_start := Vector2.ZERO
## Rate of the spring, m³/s.
var source_rate: float = 0.0
## Radius of the spring, m.
var source_radius: float = 0.0
## Local X, Z (m) where the first boat is dropped.
var boat_start := Vector2.ZERO

var _rng_state: int = 0


## Where across the grid (v, 0..1 along local +Z) the river's centre line runs at u (0..1 along
## local +X).
static func centre_line(u: float) -> float:
	return 0.5 + 0.12 * sin(u * TAU)


## Terrain height at (u, v) in units of the relief, before noise.
static func shape(u: float, v: float) -> float:
	var centre: float = centre_line(u)
	var across: float = minf(absf(v - centre) * 4.0, 1.0)
	var slope: float = SLOPE * (1.0 - u)
	var banks: float = 0.7 * pow(maxf(across - 0.15, 0.0) / 0.85, 1.5)
	var t: float = minf(absf((u - DAM_U) / 0.035), 1.0)
	var dam: float = DAM_HEIGHT * (1.0 - t * t) * (1.0 - t * t)
	var basin_r: float = minf(Vector2(u - 0.82, v - centre_line(0.82)).length() / 0.16, 1.0)
	var basin: float = -0.3 * (1.0 - basin_r) * (1.0 - basin_r)
	return slope + banks + dam + basin


## Builds the landscape for a grid of [param size] cells of [param cell_size] m.
func generate(size: Vector2i, cell_size: float, seed_value: int, roughness: float,
		relief: float) -> void:
	var noise: PackedFloat32Array = diamond_square(size.x, size.y, seed_value, roughness)
	heights.resize(size.x * size.y)
	for y in size.y:
		for x in size.x:
			var u: float = (x + 0.5) / size.x
			var v: float = (y + 0.5) / size.y
			var i: int = y * size.x + x
			heights[i] = relief * (shape(u, v) + NOISE * noise[i])
	var floor_at_dam: float = SLOPE * (1.0 - DAM_U)
	reservoir_level = relief * (floor_at_dam + RESERVOIR_DEPTH)
	lake_level = 0.0
	dam_crest = relief * (floor_at_dam + DAM_HEIGHT)
	var extent := Vector2(size) * cell_size
	dam_position = Vector2((DAM_U - 0.5) * extent.x, (centre_line(DAM_U) - 0.5) * extent.y)
	source_position = Vector2((SOURCE_U - 0.5) * extent.x, (centre_line(SOURCE_U) - 0.5) * extent.y)
	reservoir_start = Vector2((RESERVOIR_U - 0.5) * extent.x,
			(centre_line(RESERVOIR_U) - 0.5) * extent.y)
	source_rate = 0.6 * relief * cell_size * cell_size
	source_radius = 3.0 * cell_size
	boat_start = dam_position - Vector2(0.08 * extent.x, 0.0)


## Rolling hills for a grid of [param size] cells of [param cell_size] m: diamond-square heights
## over the whole relief, lakes up to 30 % of it, a spring on the highest cell. The fields of
## the valley are filled so that the demo runs the same way: the "dam" is the point the camera
## looks at (the middle of the grid), the reservoir is the lake around the lowest cell.
func generate_hills(size: Vector2i, cell_size: float, seed_value: int, roughness: float,
		relief: float) -> void:
	var noise: PackedFloat32Array = diamond_square(size.x, size.y, seed_value, roughness)
	heights.resize(size.x * size.y)
	var highest: int = 0
	var lowest: int = 0
	for i in heights.size():
		heights[i] = relief * noise[i]
		if heights[i] > heights[highest]:
			highest = i
		if heights[i] < heights[lowest]:
			lowest = i
	var extent := Vector2(size) * cell_size
	var at := func(i: int) -> Vector2:
		return (Vector2(i % size.x, i / size.x) + Vector2(0.5, 0.5)) * cell_size - extent / 2.0
	lake_level = 0.3 * relief
	reservoir_level = lake_level
	reservoir_start = at.call(lowest)
	dam_position = Vector2.ZERO
	dam_crest = lake_level
	source_position = at.call(highest)
	source_rate = 0.6 * relief * cell_size * cell_size
	source_radius = 3.0 * cell_size
	boat_start = reservoir_start


## Diamond-square heights in [0, 1] on a (2ⁿ+1)² lattice covering width × height, cropped to
## it; [param roughness] in 0..1 (0.5 gives natural hills). Same algorithm and generator as
## [code]scenarios::diamond_square[/code].
func diamond_square(width: int, height: int, seed_value: int,
		roughness: float) -> PackedFloat32Array:
	_rng_state = seed_value
	var side: int = 1
	while side < maxi(maxi(width, height), 2) - 1:
		side *= 2
	side += 1
	var h := PackedFloat64Array()
	h.resize(side * side)
	for corner: Vector2i in [Vector2i(0, 0), Vector2i(side - 1, 0), Vector2i(0, side - 1),
			Vector2i(side - 1, side - 1)]:
		h[corner.y * side + corner.x] = _next_float()
	var step: int = side - 1
	var amplitude: float = 1.0
	var rough: float = clampf(roughness, 0.0, 1.0)
	while step > 1:
		var half: int = step / 2
		for y in range(half, side, step):
			for x in range(half, side, step):
				var mean: float = (h[(y - half) * side + x - half] + h[(y - half) * side + x + half]
						+ h[(y + half) * side + x - half] + h[(y + half) * side + x + half]) * 0.25
				h[y * side + x] = mean + _range(-amplitude, amplitude) * 0.5
		for y in range(0, side, half):
			var start: int = half if (y / half) % 2 == 0 else 0
			for x in range(start, side, step):
				var sum: float = 0.0
				var n: float = 0.0
				for d: Vector2i in [Vector2i(-1, 0), Vector2i(1, 0), Vector2i(0, -1), Vector2i(0, 1)]:
					var nx: int = x + d.x * half
					var ny: int = y + d.y * half
					if nx >= 0 and ny >= 0 and nx < side and ny < side:
						sum += h[ny * side + nx]
						n += 1.0
				h[y * side + x] = sum / n + _range(-amplitude, amplitude) * 0.5
		amplitude *= pow(2.0, -2.0 * (1.0 - rough))
		step = half
	var lo: float = INF
	var hi: float = -INF
	for value in h:
		lo = minf(lo, value)
		hi = maxf(hi, value)
	var span: float = maxf(hi - lo, 1.0e-6)
	var out := PackedFloat32Array()
	out.resize(width * height)
	for y in height:
		for x in width:
			out[y * width + x] = (h[y * side + x] - lo) / span
	return out


## Logical (unsigned) right shift of a 64-bit pattern.
static func _shift_right(value: int, bits: int) -> int:
	return (value >> bits) & ((1 << (64 - bits)) - 1)


func _next_u64() -> int:
	_rng_state += _GOLDEN
	var z: int = _rng_state
	z = (z ^ _shift_right(z, 30)) * _MIX1
	z = (z ^ _shift_right(z, 27)) * _MIX2
	return z ^ _shift_right(z, 31)


## Uniform in [0, 1): the top 24 bits, as the Rust generator takes them.
func _next_float() -> float:
	return _shift_right(_next_u64(), 40) / 16777216.0


func _range(lo: float, hi: float) -> float:
	return lo + (hi - lo) * _next_float()
