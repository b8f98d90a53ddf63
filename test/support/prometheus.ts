/** A small parser of the Prometheus text exposition format, for assertions on /metrics. */

/** One sample: a metric name, its labels and its value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parsed exposition text. */
export interface Exposition {
  samples: Sample[];
  /** `# TYPE` declarations by metric family name. */
  types: Map<string, string>;
  /**
   * The value of the one sample named `name` whose labels include `labels`; 0 when
   * there is none (a counter that never moved is absent). Throws when several match.
   */
  value(name: string, labels?: Record<string, string>): number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses Prometheus text; throws on a line it cannot read. */
export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    if (line.startsWith("#")) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type?.[1] && type[2]) types.set(type[1], type[2]);
      continue;
    }
    const match = LINE.exec(line);
    if (!match?.[1] || match[3] === undefined) throw new Error(`unreadable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? "").matchAll(LABEL)) {
      if (label[1] !== undefined && label[2] !== undefined) labels[label[1]] = label[2];
    }
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return {
    samples,
    types,
    value(name, labels = {}) {
      const found = samples.filter(
        (sample) =>
          sample.name === name &&
          Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
      );
      if (found.length > 1) {
        throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
      }
      return found[0]?.value ?? 0;
    },
  };
}
