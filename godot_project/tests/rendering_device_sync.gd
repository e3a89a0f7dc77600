extends RefCounted
## multiplayer_sync on the RenderingDevice backend, run by [code]test_rendering_device.gd[/code]
## (in a window: the backend needs a RenderingDevice), whose checks it counts: a listen server
## and a client in one process, each [PipeWater] in a subtree with a [SceneMultiplayer] of its
## own ([method SceneTree.set_multiplayer]) over ENet on 127.0.0.1. The node's own sync runs:
## the server's captures compare on the device and read back only the changed tiles, and the
## client writes the server's tiles cell by cell on the device.

const TestBase := preload("res://tests/test_base.gd")

## Side of the grid the sync test shares (cells of 1 m): 16 sync tiles of 32² cells.
const SYNC_SIDE := 128
## Depth quanta per metre (pipewater-core's DEPTH_QUANTUM is 2⁻²⁰ m).
const QUANTA_PER_M := 1048576
## Pits in the dry flat, 3×3 cells 1 m deep, away from the corner's sync tiles: water set in
## one to 0.5 m lies below the rim and rests at once, so the server's change reaches the client
## through the first capture after it (a client applies the newest copy of a tile, which for a
## tile that changes at every capture is always ahead of its clock).
const PITS := 12
const PIT_DEPTH_M := 1.0
const PIT_FILL_M := 0.5
## Frames between two edits the server makes on its own (set_water_region, not an edit
## request: it reaches the client only through a capture), and the frames of each period after
## which the client must hold the server's water again: a capture is begun at the next sync
## (30 Hz), taken one or two syncs later, and the client runs 4 frames behind the newest it was
## told of, so the copy of the edited tile lands a few frames after the edit; unless ENet drops
## it: in this one process under lavapipe (a few frames a second) ENet's throttle drops every
## unreliable packet to the client, and the server sends a tile not acknowledged for
## resend_after (0.3 s) again, reliably, which takes a few frames more.
const SYNC_EDIT_PERIOD := 24
const SYNC_SETTLED_AFTER := 16
## The ledger is kept in whole quanta, so a client's expected and held totals agree exactly;
## the tolerance is one quantum of one 1 m² cell (m³), far below the 0.5 m × 9 cells a missed
## booking would leave.
const ONE_QUANTUM_M3 := 1.0 / 1048576.0

## The test script that runs this one: its tree, and its checks.
var _tree: TestBase


func _init(tree: TestBase) -> void:
	_tree = tree


## The ground both peers share: a corner reservoir walled at x, y = 40–41 (4 m high), the rest
## flat and dry with PITS pits.
func _sync_terrain() -> PackedFloat32Array:
	var heights := PackedFloat32Array()
	heights.resize(SYNC_SIDE * SYNC_SIDE)
	for y in SYNC_SIDE:
		for x in SYNC_SIDE:
			var wall := (x in [40, 41] and y < 42) or (y in [40, 41] and x < 42)
			heights[y * SYNC_SIDE + x] = 4.0 if wall else 0.0
	for k in PITS:
		var pit := _pit(k)
		for y in range(pit.position.y, pit.end.y):
			for x in range(pit.position.x, pit.end.x):
				heights[y * SYNC_SIDE + x] = -PIT_DEPTH_M
	return heights


## The cells of pit [param k], all in sync tiles the corner's water never reaches.
func _pit(k: int) -> Rect2i:
	return Rect2i(70 + (k % 4) * 14, 70 + (k / 4) * 16, 3, 3)


## One peer of the sync test: a node under [code]/root/<label>[/code] whose subtree has a
## SceneMultiplayer of its own over [param peer], holding a PipeWater on the RenderingDevice.
func _make_sync_peer(label: String, peer: ENetMultiplayerPeer) -> PipeWater:
	var holder := Node.new()
	holder.name = label
	_tree.root.add_child(holder)
	var api := SceneMultiplayer.new()
	api.multiplayer_peer = peer
	_tree.set_multiplayer(api, holder.get_path())
	var water: PipeWater = ClassDB.instantiate(&"PipeWater")
	water.backend = PipeWater.BACKEND_RENDERING_DEVICE
	water.grid_size = Vector2i(SYNC_SIDE, SYNC_SIDE)
	water.cell_size = 1.0
	water.terrain_heights = _sync_terrain()
	water.initial_water_level = 0.0
	water.show_mesh = false
	water.detail_waves = false
	water.multiplayer_sync = true
	water.sync_budget_kbps = 100000.0
	water.paused = true
	holder.add_child(water)
	water.rebuild()
	return water


## A listen server in a window (the RenderingDevice backend) and a client on the same backend,
## each PipeWater in a subtree with its own SceneMultiplayer over ENet on 127.0.0.1 in this one
## process. The server's water: a dam break sloshing inside a walled corner (4 of 16 sync tiles),
## which the client joins while it moves; then every SYNC_EDIT_PERIOD frames the server fills a
## pit on the dry flat, where every tile sleeps, with set_water_region (not an edit request: it
## reaches the client only through the server's captures). States, with the figures printed:
## - the server reads only the tiles its device found changed: under half of every tile a
##   capture (before this backend compared on the device it read all 16 at every capture);
## - the client, whose keyframe of moving water and whose pits were written cell by cell from
##   the server's tiles, holds the server's water of the same frame exactly (every cell's depth
##   quanta) once each edit had time to arrive: so the server's comparison missed no change
##   (an edit on a sleeping tile, a flow), and the client's write set the cells, flows included,
##   and woke their tiles (unwoken, the corner would stand still on the client);
## - the client's ledger balances exactly (its write books the depth it changed).
## The client's checks held with the whole read and restore it did before too (that was exact,
## only slow); the server's reads are what fails without the device's comparison.
func run() -> void:
	print("-- multiplayer_sync: a listen server and a client on the RenderingDevice, one process")
	var max_fps := Engine.max_fps
	# The sync runs at 30 Hz of wall time; frames at most at 60 Hz, as a game runs them, keep
	# the captures' latency in frames what it is in a game.
	Engine.max_fps = 60
	var server_peer := ENetMultiplayerPeer.new()
	server_peer.set_bind_ip("127.0.0.1")
	var port := 0
	var err := ERR_CANT_CREATE
	for attempt in 10:
		port = 20000 + randi() % 30000
		err = server_peer.create_server(port, 2)
		if err == OK:
			break
	_tree._check(err == OK, "an ENet server listens on 127.0.0.1:%d" % port)
	if err != OK:
		Engine.max_fps = max_fps
		return
	var server := _make_sync_peer("SyncServer", server_peer)
	var client_peer := ENetMultiplayerPeer.new()
	client_peer.create_client("127.0.0.1", port)
	var client := _make_sync_peer("SyncClient", client_peer)
	# The dam break inside the corner: 1.5 m west of x = 12, 0.2 m elsewhere in the corner.
	var corner := PackedInt32Array()
	for y in 40:
		for x in 40:
			corner.append(int((1.5 if x < 12 else 0.2) * QUANTA_PER_M))
	server.set_water_region(Rect2i(0, 0, 40, 40), corner)
	server.paused = false
	client.paused = false
	var whole := Rect2i(0, 0, SYNC_SIDE, SYNC_SIDE)
	# The server's water by its frames (frame → depths), to compare the client's with.
	var history := {}
	var started := false
	for i in 600:
		await _tree.process_frame
		history[int(server.get_sync_stats().get("frame", -1))] = server.get_water_region(whole)
		if client.get_sync_stats().get("started", false):
			started = true
			break
	var roles := [server.get_sync_stats().get("role"), client.get_sync_stats().get("role")]
	_tree._check(
		started and roles == ["server", "client"],
		"the client joined the listen server and runs its frames (roles %s)" % [roles]
	)
	if not started:
		await _end_sync_pair(server, client, max_fps)
		return
	var at_start: Dictionary = server.get_sync_stats()
	var keyframe_at := int(client.get_sync_stats()["frame"])
	var fill := PackedInt32Array()
	fill.resize(9)
	fill.fill(int(PIT_FILL_M * QUANTA_PER_M))
	var edits := 0
	var compared := 0
	var differing_frames := 0
	var worst := 0
	var in_flight := 0
	var moved_after_keyframe := -1
	for i in PITS * SYNC_EDIT_PERIOD:
		var phase := i % SYNC_EDIT_PERIOD
		if phase == 0:
			server.set_water_region(_pit(edits), fill)
			edits += 1
		await _tree.process_frame
		history[int(server.get_sync_stats()["frame"])] = server.get_water_region(whole)
		var at := int(client.get_sync_stats()["frame"])
		if moved_after_keyframe < 0 and history.has(keyframe_at) and history.has(keyframe_at + 10):
			moved_after_keyframe = _cells_differing(history[keyframe_at], history[keyframe_at + 10])
		if history.has(at):
			var differing := _cells_differing(client.get_water_region(whole), history[at])
			if phase >= SYNC_SETTLED_AFTER:
				compared += 1
				differing_frames += int(differing > 0)
				worst = maxi(worst, differing)
			else:
				in_flight += int(differing > 0)
		for old: int in history.keys():
			if old < at - 60 and (moved_after_keyframe >= 0 or old < keyframe_at):
				history.erase(old)
	var stats: Dictionary = server.get_sync_stats()
	var captures: int = stats["captures"] - at_start["captures"]
	var read: int = stats["tiles_read"] - at_start["tiles_read"]
	var sync_tiles: int = stats["tiles"]
	print(
		(
			"   %d pits filled on sleeping tiles; %d captures read %d tiles of %d (%.2f each)"
			% [edits, captures, read, sync_tiles, float(read) / maxi(captures, 1)]
		)
	)
	_tree._check(
		captures >= 20 and read * 2 < captures * sync_tiles,
		(
			(
				"the server reads only the tiles its device found changed: %d over %d captures,"
				+ " under half of the %d that reading every tile takes"
			)
			% [read, captures, captures * sync_tiles]
		)
	)
	_tree._check(
		moved_after_keyframe > 0,
		(
			(
				"the client's keyframe (server frame %d) held moving water: %d cells changed"
				+ " in the 10 frames after it"
			)
			% [keyframe_at, moved_after_keyframe]
		)
	)
	_tree._check(
		compared >= 60 and differing_frames == 0,
		(
			(
				"the client's water equals the server's of the same frame in all %d cells at %d"
				+ " of %d frames compared once each pit's copy had time to arrive (most cells"
				+ " differing at one: %d; earlier frames awaiting a pit's copy that differed: %d)"
			)
			% [SYNC_SIDE * SYNC_SIDE, compared - differing_frames, compared, worst, in_flight]
		)
	)
	var ledger: Dictionary = client.get_water_ledger()
	print("   client ledger: %s" % ledger)
	_tree._near(
		ledger.get("total", NAN),
		ledger.get("expected", NAN),
		ONE_QUANTUM_M3,
		(
			"the client's ledger balances, its cells written from the server's tiles (added"
			+ " %.4f m³, removed %.4f m³)" % [ledger.get("added", NAN), ledger.get("removed", NAN)]
		)
	)
	await _end_sync_pair(server, client, max_fps)


func _end_sync_pair(server: PipeWater, client: PipeWater, max_fps: int) -> void:
	for water: PipeWater in [client, server]:
		var holder := water.get_parent()
		var api := holder.get_multiplayer()
		if api.multiplayer_peer != null:
			api.multiplayer_peer.close()
		_tree.set_multiplayer(null, holder.get_path())
		holder.queue_free()
	Engine.max_fps = max_fps
	for i in 3:
		await _tree.process_frame


## Cells whose depth quanta differ between [param a] and [param b] (and any length difference).
func _cells_differing(a: PackedInt32Array, b: PackedInt32Array) -> int:
	var count := absi(a.size() - b.size())
	for i in mini(a.size(), b.size()):
		if a[i] != b[i]:
			count += 1
	return count
