// A reference peer for the ragsync demo, written from PROTOCOL.md alone:
// it joins a room (1), answers the Go offerer over one negotiated data
// channel (2), follows the leader's clock (3) and plays fighter 2 (7): a
// scripted, physics-free fighter that walks to the rival and punches.
// Query: ?signal=ws://HOST:PORT&room=CODE. It logs "refpeer {json}" lines.
'use strict';
const Q = new URLSearchParams(location.search);
const log = (...a) => console.log('refpeer', ...a, (performance.now() / 1000).toFixed(3) + ' s');
const st = { role: '', open: false, synced: false, sent: 0, statesIn: 0, pongs: 0, hitsReported: 0,
  hitsTaken: 0, hp: 100, rivalHP: 0, round: 0, pround: 0, dist: 0, tagOK: null, errors: 0, lastErr: '' };
const fail = (e) => { st.errors++; st.lastErr = String(e); log('error', String(e)); };

// ---- clocks: mine in ns (any origin), game time in µs (the leader's) ----
const nowNs = () => BigInt(Math.round(performance.now() * 1e6));
const nowUs = () => performance.now() * 1000;
let offsets = [], offset = 0, lastG = -Infinity;
function gameUs() { const g = Math.max(Math.round(nowUs() + offset), lastG + 1); lastG = g; return g; }

// ---- byte helpers: Go varints, big-endian header fields ----
function uv(a, v) { while (v >= 128) { a.push(v % 128 + 128); v = Math.floor(v / 128); } a.push(v); }
function sv(a, v) { uv(a, v >= 0 ? 2 * v : -2 * v - 1); }
function rdU(p, o) { let v = 0, m = 1; for (;;) { const b = p[o.i++]; if (b === undefined) throw 'truncated'; v += (b & 127) * m; if (b < 128) return v; m *= 128; } }
function rdS(p, o) { const u = rdU(p, o); return u % 2 ? -(u + 1) / 2 : u / 2; }
class Bits { // most significant bit first
  constructor(a) { this.a = a; this.n = 0; }
  w(v, n) { for (let i = n - 1; i >= 0; i--) { if (this.n % 8 === 0) this.a.push(0); if (Math.floor(v / 2 ** i) % 2) this.a[this.a.length - 1] |= 0x80 >> (this.n % 8); this.n++; } }
  ue(v, k) { const m = Math.floor(v / 2 ** k) + 1, L = m.toString(2).length; this.w(0, L - 1); this.w(m, L); this.w(v % 2 ** k, k); }
  se(s, k) { this.ue(s > 0 ? 2 * s - 1 : -2 * s, k); }
}
class RBits {
  constructor(p, off) { this.p = p; this.n = off * 8; }
  r(n) { let v = 0; for (let i = 0; i < n; i++, this.n++) v = v * 2 + ((this.p[this.n >> 3] >> (7 - (this.n & 7))) & 1); return v; }
}

// ---- the arena (7): bounds are the interior plus 1 m; the codec's tag ----
const MINX = -9, MINY = -1, BX = 15, BY = 14; // bitlen(18000), bitlen(12000)
const TAG = (() => {
  let h = 0x811c9dc5; const dv = new DataView(new ArrayBuffer(8));
  for (const v of [-9, -1, 9, 11, 120, 100, 1000]) {
    dv.setFloat64(0, v, true);
    for (let i = 0; i < 8; i++) h = Math.imul(h ^ dv.getUint8(i), 0x01000193) >>> 0;
  }
  return (h ^ h >>> 8 ^ h >>> 16 ^ h >>> 24) & 255;
})();
// The fighter: parents, joint anchors (parent frame, child frame), centres of mass.
const PARENT = [-1, 0, 0, 2, 0, 4, 0, 6, 0, 8];
const ANCH = [[0.30, -0.14], [0.24, 0.12], [-0.13, 0.13], [0.24, 0.12], [-0.13, 0.13],
  [-0.27, 0.20], [-0.20, 0.19], [-0.27, 0.20], [-0.20, 0.19]]; // y only; x = 0
const LCY = [0, 0, 0, 0, 0, 0, 0, -0.05875, 0, -0.05875]; // shins carry a foot
const STANCE = [0, 0.6, 1.9, 0.9, 1.7, 0.35, -0.4, -0.25, -0.2];
const rot = (x, y, a) => [x * Math.cos(a) - y * Math.sin(a), x * Math.sin(a) + y * Math.cos(a)];
const wrap = (a) => { a = ((a + Math.PI) % (2 * Math.PI) + 2 * Math.PI) % (2 * Math.PI) - Math.PI; return a; };

// pose returns the 10 bodies (x, y, angle) of a fighter at torso x, facing
// s (+1 right, -1 left), joint angles j (facing right), feet on the ground.
function pose(x, s, j) {
  const b = [{ x: 0, y: 0, a: 0 }];
  for (let k = 0; k < 9; k++) {
    const p = b[PARENT[k + 1]], a = p.a + s * j[k];
    const [ax, ay] = rot(0, ANCH[k][0], p.a), [cx, cy] = rot(0, ANCH[k][1], a);
    b.push({ x: p.x + ax - cx, y: p.y + ay - cy, a });
  }
  let low = Infinity;
  for (const i of [7, 9]) for (const fx of [-0.12, 0.12]) low = Math.min(low, b[i].y + rot(fx, -0.27, b[i].a)[1]);
  for (const q of b) { q.x += x; q.y += 0.005 - low; }
  return b;
}

// ---- the snapshot codec (physics/doc.go), always at level s = 3 ----
const KR = 4, KV = 2, KW = 2, KP = 1, VQ = 8 / 64, WQ = 8 / 32, PQ = 0.002;
function com(b, i) { const [cx, cy] = rot(0, LCY[i], b.a); return [b.x + cx, b.y + cy]; }
function encodeFighter(out, f) {
  const w = new Bits(out);
  w.ue(1, 0); w.ue(2 - 0 - 1, 0); // one object, id 2
  w.w(f.hp, 10); w.w(f.action, 4); w.w(f.facing > 0 ? 1 : 0, 1); w.w(f.phase, 2); w.w(f.phase ? 2 : 0, 3); w.w(f.aseq & 3, 2);
  w.w(3, 2); w.w(0, 1); w.w(KR, 3); w.w(KV, 2); w.w(KW, 3); w.w(KP, 2);
  const rec = [];
  f.bodies.forEach((b, i) => {
    if (i === 0) {
      const qx = Math.round((b.x - MINX) / 0.001), qy = Math.round((b.y - MINY) / 0.001);
      const qa = Math.round(wrap(b.a) / (2 * Math.PI / 16384)) & 16383;
      const vx = Math.round(b.vx * 64), vy = Math.round(b.vy * 64), om = Math.round(b.w * 32);
      w.w(qx, BX); w.w(qy, BY); w.w(qa, 14); w.se(vx, KR); w.se(vy, KR); w.se(om, KR);
      rec.push({ x: MINX + qx * 0.001, y: MINY + qy * 0.001, a: (qa >= 8192 ? qa - 16384 : qa) * 2 * Math.PI / 16384, vx: vx / 64, vy: vy / 64, w: om / 32 });
      return;
    }
    const p = rec[PARENT[i]], k = i - 1;
    const qa = Math.round(wrap(b.a) / (2 * Math.PI / 2048)) & 2047;
    const a = (qa >= 1024 ? qa - 2048 : qa) * 2 * Math.PI / 2048;
    const kw = Math.round((b.w - p.w) / WQ), om = p.w + kw * WQ;
    // The joint's prediction from the decoded parent (layout.go's predictChild).
    const [ax, ay] = rot(0, ANCH[k][0], p.a), jx = p.x + ax, jy = p.y + ay;
    const [sx, sy] = rot(0, ANCH[k][1], a), px = jx - sx, py = jy - sy;
    const [pcx, pcy] = com(p, PARENT[i]), [ccx, ccy] = com({ x: px, y: py, a }, i);
    const pvx = p.vx - p.w * (jy - pcy) - om * (ccy - jy), pvy = p.vy + p.w * (jx - pcx) + om * (ccx - jx);
    const rx = Math.round((b.x - px) / PQ), ry = Math.round((b.y - py) / PQ);
    const rvx = Math.round((b.vx - pvx) / VQ), rvy = Math.round((b.vy - pvy) / VQ);
    w.w(qa, 11); w.se(kw, KW); w.se(rx, KP); w.se(ry, KP); w.se(rvx, KV); w.se(rvy, KV);
    rec.push({ x: px + rx * PQ, y: py + ry * PQ, a, vx: pvx + rvx * VQ, vy: pvy + rvy * VQ, w: om });
  });
}

// ---- my fighter (id 2, the answerer's), scripted ----
const F = { x: 2, facing: -1, want: -1, turn: 0, gait: 0, hp: 100, action: 1, phase: 0, aseq: 0, attackAt: -1e9, tick: -1, walk: 0, bodies: null, input: 0 };
const PUNCH = [6, 8, 10]; // wind-up, active, recovery ticks (the move table)
let rival = null; // the rival's torso as its newest state places it: {x, y, a, g}
let myReports = [], lastHit = -1;
const lerp = (a, b, t) => a.map((v, i) => v + (b[i] - v) * Math.max(0, Math.min(1, t)));
function stepFighter(tick, g, fight) {
  const dt = F.tick < 0 ? 1 / 60 : (tick - F.tick) / 60;
  F.input = 0;
  let j = STANCE;
  const dx = rival ? rival.x - F.x : 0, d = Math.abs(dx);
  const t = tick - F.attackAt, inAttack = t < PUNCH[0] + PUNCH[1] + PUNCH[2];
  if (rival && d > 0.3 && !inAttack) F.want = dx > 0 ? 1 : -1;
  F.phase = 0; F.action = 1;
  if (F.hp === 0) F.action = 9;
  else if (fight && !inAttack && !F.turn && rival && d < 0.9 && t > 45) { F.attackAt = tick; F.aseq++; F.input = 16; }
  const u = tick - F.attackAt;
  if (F.hp > 0 && u < PUNCH[0] + PUNCH[1] + PUNCH[2]) {
    const back = STANCE.slice(), out = STANCE.slice();
    back[3] = 0.4; back[4] = 2.3; out[3] = 1.55; out[4] = 0.1;
    F.action = 5;
    if (u < PUNCH[0]) { F.phase = 1; j = lerp(STANCE, back, (u + 1) / 3); }
    else if (u < PUNCH[0] + PUNCH[1]) { F.phase = 2; j = lerp(back, out, (u - PUNCH[0] + 1) / 2); }
    else { F.phase = 3; j = lerp(out, STANCE, (u - PUNCH[0] - PUNCH[1] + 1) / PUNCH[2]); }
  } else if (F.hp > 0 && fight && rival && d > 0.75) {
    F.action = 2; F.input = dx > 0 ? 2 : 1;
    const v = Math.min(1.5, (d - 0.74) / dt) * Math.sign(dx);
    F.x = Math.max(-7.5, Math.min(7.5, F.x + v * dt)); F.walk += 9 * dt;
  }
  // The gait swings the legs, fading in and out over 6 ticks.
  F.gait = Math.max(0, Math.min(1, F.gait + (F.action === 2 ? 1 : -1) / 6));
  const s = F.gait * Math.sin(F.walk);
  j = j.slice(); j[5] += 0.3 * s; j[7] -= 0.3 * s; j[6] -= 0.3 * Math.max(0, -s); j[8] -= 0.3 * Math.max(0, s);
  // A turn goes through the neutral pose (all joints at 0), the same
  // mirrored, so no body jumps: 4 ticks there, the flip, 4 ticks back.
  if (F.want !== F.facing) { F.turn = Math.min(1, F.turn + 0.25); if (F.turn === 1) F.facing = F.want; } else F.turn = Math.max(0, F.turn - 0.25);
  j = lerp(j, [0, 0, 0, 0, 0, 0, 0, 0, 0], F.turn);
  const nb = pose(F.x, F.facing, j);
  nb.forEach((b, i) => { // velocities: of the centre of mass, by difference
    const o = F.bodies && F.bodies[i], [cx, cy] = com(b, i);
    const cl = (v, m) => Math.max(-m, Math.min(m, v)); // within the rules' speeds (a turn is not a swing)
    if (o) { const [ox, oy] = com(o, i); b.vx = cl((cx - ox) / dt, 8); b.vy = cl((cy - oy) / dt, 8); b.w = cl(wrap(b.a - o.a) / dt, 30); } else { b.vx = b.vy = b.w = 0; }
  });
  F.bodies = nb; F.tick = tick;
  // A hit: my lower arm R's fist within reach of the rival's torso, in the active phase.
  if (F.phase === 2 && lastHit !== F.attackAt && rival) {
    const la = nb[5], [tx, ty] = rot(0, -0.15, la.a), [lx, ly] = rot(la.x + tx - rival.x, la.y + ty - rival.y, -rival.a);
    const gap = Math.hypot(Math.max(0, Math.abs(lx) - 0.15), Math.max(0, Math.abs(ly) - 0.30));
    if (gap < 0.15) {
      lastHit = F.attackAt; st.hitsReported++;
      const sp = Math.hypot(la.vx, la.vy);
      myReports.push({ seq: F.aseq & 3, g, view: Math.max(0, g - rival.g), x: la.x, y: la.y, a: la.a, imp: Math.min(12, 2.7 * Math.max(sp, 1)) });
      log('hit', JSON.stringify({ gap: +gap.toFixed(3), speed: +sp.toFixed(2), g }));
    }
  }
}

// ---- the game's packets (7) ----
let pktCount = 0, hpChanges = [];
const seenHits = new Set();
function statePacket(g, tick) {
  const p = [0x71, (pktCount >> 8) & 255, pktCount & 255, 0x53, 0xC4];
  pktCount = (pktCount + 1) & 0xffff;
  uv(p, R.n); uv(p, 0); // my round resets: one per round set (the first included); no claims
  uv(p, 1); uv(p, 2); p.push(F.input);
  myReports = myReports.filter((h) => g - h.g <= 250000);
  uv(p, myReports.length);
  for (const h of myReports) {
    uv(p, 2); uv(p, 1); p.push(h.seq | 2 << 2, 1); // lower arm R on the torso
    uv(p, g - h.g); uv(p, Math.round(h.view)); uv(p, 0); uv(p, Math.round(h.imp * 1000));
    sv(p, Math.round(h.x * 1000)); sv(p, Math.round(h.y * 1000));
    uv(p, Math.round((((h.a % (2 * Math.PI)) + 2 * Math.PI) % (2 * Math.PI)) / (2 * Math.PI) * 65536) % 65536);
  }
  p.push(1, TAG); sv(p, g); uv(p, tick);
  encodeFighter(p, F);
  return p;
}
function onStatePacket(p) { // the rival's: its round, hits on my fighter, its torso
  const o = { i: 2 + (p[0] === 0x71 ? 3 : 0) }, hits = [];
  const round = rdU(p, o);
  for (let n = rdU(p, o); n > 0; n--) { rdU(p, o); rdU(p, o); }
  for (let n = rdU(p, o); n > 0; n--) { rdU(p, o); o.i++; }
  for (let n = rdU(p, o); n > 0; n--) {
    rdU(p, o); const vic = rdU(p, o), b = p[o.i++], part = p[o.i++], age = rdU(p, o);
    rdU(p, o); rdU(p, o); const imp = rdU(p, o) / 1000; rdS(p, o); rdS(p, o); rdU(p, o);
    hits.push({ vic, seq: b & 3, part, age, imp });
  }
  if (p[o.i] !== 1) throw 'snapshot version ' + p[o.i];
  st.tagOK = p[o.i + 1] === TAG; o.i += 2;
  const g = rdS(p, o); rdU(p, o);
  const r = new RBits(p, o.i);
  const ue0 = () => { let z = 0; while (r.r(1) === 0) z++; return 2 ** z + r.r(z) - 1; };
  const count = ue0(), id = ue0() + 1;
  if (count > 0 && id === 1) {
    st.rivalHP = r.r(10); r.r(4 + 1 + 2 + 3 + 2); r.r(2 + 1 + 3 + 2 + 3 + 2);
    const qx = r.r(BX), qy = r.r(BY), qa = r.r(14);
    rival = { x: MINX + qx * 0.001, y: MINY + qy * 0.001, a: (qa >= 8192 ? qa - 16384 : qa) * 2 * Math.PI / 16384, g };
  }
  st.statesIn++;
  st.pround = round;
  for (const h of hits) { // the victim's owner decides the damage
    const key = h.seq + ':' + (g - h.age);
    if (h.vic !== 2 || seenHits.has(key) || F.hp === 0) continue;
    seenHits.add(key); st.hitsTaken++;
    const m = h.part === 2 ? 2 : h.part === 1 ? 1 : 0.6;
    F.hp = Math.max(0, F.hp - Math.max(1, Math.min(40, Math.round(h.imp * 0.8 * m))));
    if (R.n && !R.report) hpChanges.push([Math.floor((g - R.start) / 1000), F.hp]);
  }
}
function newRoundFighter() { F.x = 2; F.facing = F.want = -1; F.turn = 0; F.hp = 100; F.bodies = null; F.attackAt = -1e9; hpChanges = []; }

// ---- rounds ('G') as the answerer: echo the round, report, want rematches ----
const R = { n: 0, start: 0, len: 0, report: null, rivalReport: false, rivalRematch: false, rivalCut: Infinity };
function onRound(p) {
  const o = { i: 2 }, n = rdU(p, o), start = rdS(p, o), len = rdU(p, o), fl = p[o.i];
  if (n > R.n) {
    if (R.n > 0) newRoundFighter(); // back to the start, full HP: a reset
    Object.assign(R, { n, start, len, report: null, rivalReport: false, rivalRematch: false, rivalCut: Infinity });
    st.round = n; log('round', JSON.stringify({ n, startsInMs: Math.round((start - gameUs()) / 1000), len }));
  }
  if (n === R.n && fl & 1) { o.i += 2; R.rivalCut = rdS(p, o); R.rivalReport = true; } // its history ends at its cut: so does mine
  if (n === R.n && fl & 2) R.rivalRematch = true;
  sendRound();
}
function sendRound() {
  if (!R.n) return;
  const p = [0x47, 1]; uv(p, R.n); sv(p, R.start); uv(p, R.len);
  p.push((R.report ? 3 : 0) | 4 | (R.rivalReport ? 8 : 0) | (R.rivalRematch ? 16 : 0));
  if (R.report) {
    p.push(R.report.ko ? 1 : 0); sv(p, R.report.cut); uv(p, 100); uv(p, R.report.ch.length);
    let prev = 0; for (const [at, hp] of R.report.ch) { sv(p, at - prev); uv(p, hp); prev = at; }
  }
  sendData(p);
}

// ---- session messages (3) over the data channel (2) ----
let dc = null, pc = null, ws = null, dataSeq = 0, ctlSeq = 0, pingSeq = 0;
function sendMsg(type, payload, seq) {
  if (!dc || dc.readyState !== 'open') return;
  const b = new Uint8Array(5 + payload.length), v = new DataView(b.buffer);
  b[0] = 1 << 4 | type; v.setUint32(1, seq >>> 0); b.set(payload, 5); dc.send(b);
}
const sendData = (p) => sendMsg(1, p, dataSeq++);
function onChannelMessage(e) {
  const b = new Uint8Array(e.data), v = new DataView(e.data), type = b[0] & 15, p = b.subarray(5);
  if (b[0] >> 4 !== 1) return;
  if (type === 2 && p[0] === 0xC5 && p[1] === 1) { // ping: pong, seq and t1 copied byte for byte
    const t2 = nowNs(), q = new Uint8Array(39), qv = new DataView(q.buffer);
    q[0] = 0xC5; q[1] = 2; q[2] = F.bodies ? 4 : 0; q.set(p.subarray(3, 15), 3);
    qv.setBigInt64(15, t2); qv.setBigInt64(23, nowNs()); qv.setBigInt64(31, 0n);
    sendMsg(3, q, ctlSeq++);
  } else if (type === 3 && p[0] === 0xC5 && p[1] === 2 && (p[2] & 2)) { // the leader's pong: its game time
    const pv = new DataView(p.buffer, p.byteOffset), t4 = nowNs();
    const rtt = Number((t4 - pv.getBigInt64(7)) - (pv.getBigInt64(23) - pv.getBigInt64(15))) / 1000;
    const game = Number(pv.getBigInt64(31)) + rtt / 2;
    offsets.push([rtt, game - Number(t4) / 1000]); if (offsets.length > 40) offsets.shift();
    offset = offsets.reduce((a, b) => (b[0] < a[0] ? b : a))[1];
    if (!st.pongs) log('first pong with game time');
    st.pongs++; if (st.pongs >= 5 && !st.synced) { st.synced = true; log('clock synced', JSON.stringify({ rttMs: rtt / 1000 })); }
  } else if (type === 4 && (p[0] === 1) && p.length === 6) { // select: ack it
    const a = p.slice(); a[0] = 2; sendMsg(4, a, ctlSeq++);
  } else if (type === 4 && p[0] === 3) { log('bye'); stop();
  } else if (type === 1 && p.length) {
    try { if (p[0] === 0x71 || p[0] === 0x53) onStatePacket(p); else if (p[0] === 0x47) onRound(p); } catch (err) { fail(err); }
  }
}
function ping() {
  const q = new Uint8Array(15), v = new DataView(q.buffer);
  q[0] = 0xC5; q[1] = 1; q[2] = 0; v.setUint32(3, ++pingSeq); v.setBigInt64(7, nowNs());
  sendMsg(2, q, ctlSeq++);
}

// ---- the game loop: one state per tick of game time, 60/s ----
let g0 = null, lastTick = -1;
function loop() {
  if (!st.synced || !dc || dc.readyState !== 'open') return;
  const g = gameUs();
  if (g0 === null) { g0 = g; log('first state', JSON.stringify({ g, pongs: st.pongs })); }
  const tick = Math.floor((g - g0) / (1e6 / 60));
  if (tick === lastTick) return;
  lastTick = tick;
  const fight = R.n > 0 && g >= R.start && g < R.start + R.len * 1000;
  stepFighter(tick, g, fight && !R.report);
  if (R.n && !R.report && g >= R.start && (F.hp === 0 || g >= R.start + R.len * 1000 || (g - R.start) / 1000 >= R.rivalCut)) {
    R.report = { ko: F.hp === 0, cut: Math.floor((g - R.start) / 1000), ch: hpChanges.slice() }; sendRound();
  }
  sendData(statePacket(g, tick)); st.sent++;
}
function stop() { clearInterval(timers); if (dc) sendMsg(4, [3, 1], ctlSeq++); }

// ---- signaling (1) and the WebRTC answer (2) ----
let pending = [], answered = false, iceServers = [];
const wsSend = (m) => ws.send(JSON.stringify(m));
async function onOffer(sdp) {
  if (pc) pc.close();
  answered = false; pending = [];
  pc = new RTCPeerConnection({ iceServers });
  dc = pc.createDataChannel('ragsync', { negotiated: true, id: 0, ordered: false, maxRetransmits: 0 });
  dc.binaryType = 'arraybuffer';
  dc.onopen = () => { st.open = true; log('channel open'); sendMsg(4, [4, 1], ctlSeq++); }; // hello: WebRTC only
  dc.onmessage = onChannelMessage;
  pc.onicecandidate = (e) => { if (!e.candidate) return; const c = { type: 'candidate', candidate: e.candidate.toJSON() }; if (answered) wsSend(c); else pending.push(c); };
  await pc.setRemoteDescription({ type: 'offer', sdp });
  await pc.setLocalDescription(await pc.createAnswer());
  wsSend({ type: 'answer', sdp: pc.localDescription.sdp });
  answered = true; pending.forEach(wsSend); pending = [];
}
ws = new WebSocket(Q.get('signal') + '/ws?v=1');
ws.onmessage = (e) => {
  const m = JSON.parse(e.data);
  // Join the room the native peer made (its creator offers); until it exists, try again.
  if (m.type === 'welcome' || m.code === 'room_not_found') setTimeout(() => wsSend({ type: 'join', room: Q.get('room') }), m.code ? 500 : 0);
  else if (m.type === 'paired') { st.role = m.role; iceServers = m.ice_servers || []; log('paired', m.role); }
  else if (m.type === 'offer') onOffer(m.sdp).catch(fail);
  else if (m.type === 'candidate' && pc) pc.addIceCandidate(m.candidate).catch(fail);
  else if (m.type === 'error') fail(m.code + ': ' + m.message);
  else if (m.type === 'peer_left') { log('peer left', m.reason); stop(); }
};
ws.onclose = (e) => log('signaling closed', e.code);
const timers = setInterval(() => { loop(); }, 4);
setInterval(ping, 100);
setInterval(() => { if (ws.readyState === 1) wsSend({ type: 'ping' }); }, 15000);
setInterval(sendRound, 250);
setInterval(() => console.log('refpeer', JSON.stringify(Object.assign(st, { t: +(performance.now() / 1000).toFixed(3), g: st.synced ? gameUs() : 0, hp: F.hp, dist: rival ? +Math.abs(rival.x - F.x).toFixed(2) : -1, x: +F.x.toFixed(2) }))), 1000);
addEventListener('pagehide', stop);
