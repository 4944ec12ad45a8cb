/**
 * Metrics in the Prometheus text exposition format (version 0.0.4): counters, gauges read when
 * scraped, and histograms. Label values are escaped as the format requires.
 */

type Labels = Record<string, string>;

interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram";
  render(): string[];
}

function labelText(labels: Labels, extra?: [string, string]): string {
  const pairs = Object.entries(labels);
  if (extra !== undefined) pairs.push(extra);
  if (pairs.length === 0) return "";
  return `{${pairs.map(([key, value]) => `${key}="${value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')}"`).join(",")}}`;
}

export class Counter {
  private readonly values = new Map<string, { labels: Labels; value: number }>();

  constructor(readonly family: { name: string; help: string }) {}

  inc(labels: Labels = {}, by = 1): void {
    const key = labelText(labels);
    const entry = this.values.get(key) ?? { labels, value: 0 };
    entry.value += by;
    this.values.set(key, entry);
  }

  render(): string[] {
    if (this.values.size === 0) return [`${this.family.name} 0`];
    return [...this.values.values()].map(({ labels, value }) => `${this.family.name}${labelText(labels)} ${value}`);
  }
}

export class Histogram {
  private readonly counts: number[];
  private sum = 0;
  private count = 0;

  constructor(
    readonly family: { name: string; help: string },
    private readonly buckets: readonly number[],
  ) {
    this.counts = buckets.map(() => 0);
  }

  observe(value: number): void {
    this.sum += value;
    this.count += 1;
    this.buckets.forEach((bound, index) => {
      if (value <= bound) this.counts[index] = (this.counts[index] as number) + 1;
    });
  }

  render(): string[] {
    const name = this.family.name;
    return [
      ...this.buckets.map((bound, index) => `${name}_bucket${labelText({}, ["le", String(bound)])} ${this.counts[index]}`),
      `${name}_bucket{le="+Inf"} ${this.count}`,
      `${name}_sum ${this.sum}`,
      `${name}_count ${this.count}`,
    ];
  }
}

export class Registry {
  private readonly families: Family[] = [];

  counter(name: string, help: string): Counter {
    const counter = new Counter({ name, help });
    this.families.push({ name, help, type: "counter", render: () => counter.render() });
    return counter;
  }

  /** A gauge whose value is read when scraped. */
  gauge(name: string, help: string, read: () => number): void {
    this.families.push({ name, help, type: "gauge", render: () => [`${name} ${read()}`] });
  }

  /** A gauge with labels, one sample per label set, read when scraped. */
  gaugeFamily(name: string, help: string, read: () => { labels: Labels; value: number }[]): void {
    this.families.push({ name, help, type: "gauge", render: () => read().map(({ labels, value }) => `${name}${labelText(labels)} ${value}`) });
  }

  histogram(name: string, help: string, buckets: readonly number[]): Histogram {
    const histogram = new Histogram({ name, help }, buckets);
    this.families.push({ name, help, type: "histogram", render: () => histogram.render() });
    return histogram;
  }

  render(): string {
    return `${this.families.map((family) => [`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`, ...family.render()].join("\n")).join("\n")}\n`;
  }
}
