/**
 * A small Prometheus registry in plain JS: the core imports no `node:*`, and prom-client requires Node modules.
 * Counters and histograms with labels, gauges read at scrape time, text exposition format 0.0.4.
 */
type Labels = Record<string, string>;

const escapeLabel = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const labelText = (labels: Labels, extra?: Labels) => {
  const all = { ...labels, ...extra };
  const keys = Object.keys(all).sort((a, b) => (a === 'le' ? 1 : b === 'le' ? -1 : a.localeCompare(b)));
  return keys.length === 0 ? '' : `{${keys.map((k) => `${k}="${escapeLabel(all[k]!)}"`).join(',')}}`;
};
/**
 * A series key: label names sorted, joined with separators that cannot occur in names. Runs on
 * every increment: the names (two or three) are sorted in place by insertion, since
 * `Array.prototype.sort` allocates a work buffer even for two elements.
 */
const keyOf = (labels: Labels) => {
  const names = Object.keys(labels);
  for (let i = 1; i < names.length; i++) {
    const name = names[i]!;
    let j = i - 1;
    for (; j >= 0 && names[j]! > name; j--) names[j + 1] = names[j]!;
    names[j + 1] = name;
  }
  let key = '';
  for (const name of names) key += `${name}\u0001${labels[name]}\u0002`;
  return key;
};

export interface Counter {
  inc(labels?: Labels, value?: number): void;
}
export interface Histogram {
  observe(labels: Labels, value: number): void;
}

export interface MetricsRegistry {
  counter(name: string, help: string): Counter;
  histogram(name: string, help: string, buckets: readonly number[]): Histogram;
  /** A gauge whose values are read at scrape time. */
  gauge(name: string, help: string, collect: () => Promise<Array<[Labels, number]>> | Array<[Labels, number]>): void;
  render(): Promise<string>;
}

export function createMetricsRegistry(): MetricsRegistry {
  const renderers: Array<() => Promise<string> | string> = [];
  return {
    counter(name, help) {
      const values = new Map<string, { labels: Labels; value: number }>();
      renderers.push(() => {
        const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} counter`];
        for (const { labels, value } of values.values()) lines.push(`${name}${labelText(labels)} ${value}`);
        return lines.join('\n');
      });
      return {
        inc(labels = {}, value = 1) {
          const key = keyOf(labels);
          const entry = values.get(key);
          if (entry) entry.value += value;
          else values.set(key, { labels, value });
        },
      };
    },
    histogram(name, help, buckets) {
      const series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
      renderers.push(() => {
        const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} histogram`];
        for (const s of series.values()) {
          let cumulative = 0;
          buckets.forEach((b, i) => {
            cumulative += s.counts[i]!;
            lines.push(`${name}_bucket${labelText(s.labels, { le: String(b) })} ${cumulative}`);
          });
          lines.push(`${name}_bucket${labelText(s.labels, { le: '+Inf' })} ${s.count}`);
          lines.push(`${name}_sum${labelText(s.labels)} ${s.sum}`);
          lines.push(`${name}_count${labelText(s.labels)} ${s.count}`);
        }
        return lines.join('\n');
      });
      return {
        observe(labels, value) {
          const key = keyOf(labels);
          let s = series.get(key);
          if (!s) {
            s = { labels, counts: buckets.map(() => 0), sum: 0, count: 0 };
            series.set(key, s);
          }
          let i = 0;
          while (i < buckets.length && !(value <= buckets[i]!)) i++;
          if (i < buckets.length) s.counts[i]!++;
          s.sum += value;
          s.count++;
        },
      };
    },
    gauge(name, help, collect) {
      renderers.push(async () => {
        const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`];
        for (const [labels, value] of await collect()) lines.push(`${name}${labelText(labels)} ${value}`);
        return lines.join('\n');
      });
    },
    async render() {
      const parts = await Promise.all(renderers.map((r) => r()));
      return `${parts.join('\n')}\n`;
    },
  };
}
