/**
 * `node --import tsx bench/profile-summary.ts FILE [--top=30] [--depth=14] [--min=1]`: where a
 * V8 CPU profile's time goes (FILE.cpuprofile), or a sampling heap profile's bytes
 * (FILE.heapprofile, bench/alloc-sampler.mjs), as text.
 *
 * - by place: self time grouped by package (`node_modules/<pkg>`), podhook source file, node's
 *   internals, and V8's own entries (`(garbage collector)`, `(program)`: the engine outside
 *   JavaScript, e.g. the JIT and native code; `(idle)`: waiting for I/O);
 * - bottom-up: the functions with the most self time;
 * - inclusive: each function's time with everything it calls (counted once per sample);
 * - top-down: the call tree from the root, down to `--depth`, nodes above `--min` percent.
 * Percentages are of the busy time (all samples but `(idle)`), or of all bytes sampled.
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}
/** A sampling heap profile: a tree of call frames, each with the bytes sampled there. */
interface HeapNode {
  id: number;
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

/** A heap profile in a CPU profile's shape: bytes for microseconds, no idle. */
function fromHeapProfile(head: HeapNode): { nodes: ProfileNode[]; self: Map<number, number> } {
  const nodes: ProfileNode[] = [];
  const self = new Map<number, number>();
  const visit = (n: HeapNode) => {
    nodes.push({ id: n.id, callFrame: n.callFrame, children: n.children.map((c) => c.id) });
    if (n.selfSize > 0) self.set(n.id, n.selfSize);
    n.children.forEach(visit);
  };
  visit(head);
  return { nodes, self };
}

/** A short place for a script URL: `pkg` for node_modules, the path under src/ or bench/, `node:x` for internals. */
export function placeOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return url;
  const m = /\/(src|bench|handlers)\/(.*)$/.exec(url);
  return m ? `${m[1]}/${m[2]}` : url;
}

const label = (f: CallFrame) => `${f.functionName || '(anonymous)'} ${placeOf(f.url, f.functionName)}${f.url ? `:${f.lineNumber + 1}` : ''}`;

export function summarize(path: string, { top = 30, depth = 14, minPercent = 1 } = {}): string {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile | { head: HeapNode };
  const heap = 'head' in raw;
  let profile: Pick<CpuProfile, 'nodes'>;
  let self: Map<number, number>;
  if ('head' in raw) {
    const converted = fromHeapProfile(raw.head);
    profile = { nodes: converted.nodes };
    self = converted.self;
  } else {
    profile = raw;
    self = new Map<number, number>();
    raw.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (raw.timeDeltas[i] ?? 0)));
  }
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const idle = [...self].filter(([id]) => byId.get(id)!.callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);
  const busy = total - idle;
  const pct = (us: number) => `${((us / busy) * 100).toFixed(1).padStart(5)}%`;
  const ms = heap ? (bytes: number) => `${(bytes / 1e6).toFixed(1).padStart(6)} MB` : (us: number) => `${(us / 1000).toFixed(0).padStart(6)} ms`;
  const lines: string[] = [
    heap
      ? `${path}: ${(total / 1e6).toFixed(1)} MB sampled`
      : `${path}: ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy (${((busy / total) * 100).toFixed(0)}%)`,
  ];

  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  const places = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, t] of self) {
    const f = byId.get(id)!.callFrame;
    if (f.functionName === '(idle)') continue;
    add(places, placeOf(f.url, f.functionName), t);
    add(functions, label(f), t);
  }
  const table = (title: string, m: Map<string, number>, n: number) => {
    lines.push('', title);
    for (const [k, t] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) lines.push(`${pct(t)} ${ms(t)}  ${k}`);
  };
  table(heap ? 'Bytes by place:' : 'Self time by place:', places, top);
  table(heap ? 'Bottom-up (bytes by allocating function):' : 'Bottom-up (self time by function):', functions, top);

  // Inclusive: every function on a sample's stack, once per sample.
  const inclusive = new Map<string, number>();
  const stackOf = (id: number) => {
    const frames = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) frames.add(label(byId.get(at)!.callFrame));
    return frames;
  };
  const stacks = new Map<number, Set<string>>();
  for (const [id, t] of self) {
    if (byId.get(id)!.callFrame.functionName === '(idle)') continue;
    const frames = stacks.get(id) ?? stackOf(id);
    stacks.set(id, frames);
    for (const f of frames) add(inclusive, f, t);
  }
  inclusive.delete(label(byId.get(profile.nodes[0]!.id)!.callFrame)); // (root)
  table(heap ? 'Inclusive (bytes with callees, by function):' : 'Inclusive (time with callees, by function):', inclusive, top);

  // Top-down.
  const subtree = new Map<number, number>();
  const sum = (id: number): number => {
    const n = byId.get(id)!;
    const t = (n.callFrame.functionName === '(idle)' ? 0 : (self.get(id) ?? 0)) + (n.children ?? []).reduce((a, c) => a + sum(c), 0);
    subtree.set(id, t);
    return t;
  };
  const root = profile.nodes[0]!.id;
  sum(root);
  lines.push('', `Top-down (to depth ${depth}, nodes above ${minPercent}%):`);
  const walk = (id: number, level: number) => {
    const n = byId.get(id)!;
    for (const c of [...(n.children ?? [])].sort((a, b) => subtree.get(b)! - subtree.get(a)!)) {
      const t = subtree.get(c)!;
      if ((t / busy) * 100 < minPercent) continue;
      lines.push(`${pct(t)} ${'  '.repeat(level)}${label(byId.get(c)!.callFrame)}`);
      if (level < depth) walk(c, level + 1);
    }
  };
  walk(root, 0);
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const option = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const file = process.argv.slice(2).find((a) => !a.startsWith('--'));
  if (!file) throw new Error('usage: bench/profile-summary.ts FILE.cpuprofile [--top=30] [--depth=14] [--min=1]');
  console.log(summarize(file, { top: Number(option('top') ?? 30), depth: Number(option('depth') ?? 14), minPercent: Number(option('min') ?? 1) }));
}
