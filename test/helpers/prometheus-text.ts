/**
 * A strict reader of Prometheus's text exposition format (0.0.4): every sample belongs to a family its
 * `# TYPE` line declared first, names and labels are well formed, values are numbers, no series is
 * given twice. Anything else throws, naming the line. No parser library is among the dependencies.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help?: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = ['counter', 'gauge', 'histogram', 'summary', 'untyped'];
/** The sample names a family of each type may have, beyond its own name. */
const SUFFIXES: Record<string, string[]> = {
  counter: [''],
  gauge: [''],
  untyped: [''],
  histogram: ['_bucket', '_sum', '_count'],
  summary: ['', '_sum', '_count'],
};

/** A value as Prometheus reads it (Go's ParseFloat): a number, or NaN and ±Inf in any case. */
function parseValue(text: string, line: string): number {
  if (/^nan$/i.test(text)) return NaN;
  if (/^[+-]?inf(inity)?$/i.test(text)) return text.startsWith('-') ? -Infinity : Infinity;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`bad value in: ${line}`);
  return Number(text);
}

/** `{a="1",b="x\"y"}` from `at` (the brace): the labels and where they end. */
function parseLabels(
  text: string,
  at: number,
  line: string,
): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = at + 1;
  while (text[i] !== '}') {
    const eq = text.indexOf('=', i);
    const name = text.slice(i, eq);
    if (eq < 0 || !LABEL_NAME.test(name) || text[eq + 1] !== '"') throw new Error(`bad label in: ${line}`);
    let value = '';
    i = eq + 2;
    for (; text[i] !== '"'; i++) {
      if (i >= text.length) throw new Error(`unterminated label value in: ${line}`);
      if (text[i] !== '\\') {
        value += text[i];
        continue;
      }
      const escaped = text[++i];
      if (escaped === 'n') value += '\n';
      else if (escaped === '\\' || escaped === '"') value += escaped;
      else throw new Error(`bad escape in: ${line}`);
    }
    if (name in labels) throw new Error(`label ${name} twice in: ${line}`);
    labels[name] = value;
    i++;
    if (text[i] === ',') i++;
    else if (text[i] !== '}') throw new Error(`expected , or } in: ${line}`);
  }
  return { labels, end: i + 1 };
}

function parseSample(line: string): Sample {
  const nameEnd = line.search(/[{ ]/);
  const name = line.slice(0, nameEnd);
  if (nameEnd < 0 || !NAME.test(name)) throw new Error(`bad metric name in: ${line}`);
  const { labels, end } =
    line[nameEnd] === '{' ? parseLabels(line, nameEnd, line) : { labels: {}, end: nameEnd };
  const rest = line.slice(end).trim().split(/ +/);
  if (line[end] !== ' ' || rest.length < 1 || rest.length > 2) throw new Error(`bad sample: ${line}`);
  if (rest[1] !== undefined && !/^-?\d+$/.test(rest[1])) throw new Error(`bad timestamp in: ${line}`);
  return { name, labels, value: parseValue(rest[0], line) };
}

/** The families of a `/metrics` answer, by name. */
export function parsePrometheusText(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  const familyOf = (sampleName: string) =>
    [...families.values()].find((family) =>
      SUFFIXES[family.type].some((suffix) => family.name + suffix === sampleName),
    );
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const comment = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
    if (comment) {
      const [, kind, name, rest = ''] = comment;
      if (!NAME.test(name)) throw new Error(`bad metric name in: ${line}`);
      const family = families.get(name) ?? { name, type: 'untyped' as const, samples: [] };
      if (kind === 'TYPE') {
        if (!TYPES.includes(rest) || families.get(name)?.samples.length) throw new Error(`bad TYPE: ${line}`);
        family.type = rest as Family['type'];
      } else family.help = rest;
      families.set(name, family);
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = parseSample(line);
    const family = familyOf(sample.name);
    if (!family) throw new Error(`sample of no declared family: ${line}`);
    const series = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
    if (seen.has(series)) throw new Error(`series given twice: ${line}`);
    seen.add(series);
    family.samples.push(sample);
  }
  return families;
}

/** The value of the sample `name` whose labels include `labels`, summed over the rest; 0 when none. */
export function valueOf(
  families: Map<string, Family>,
  name: string,
  labels: Record<string, string> = {},
): number {
  return [...families.values()]
    .flatMap((family) => family.samples)
    .filter((sample) => sample.name === name)
    .filter((sample) => Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
    .reduce((sum, sample) => sum + sample.value, 0);
}
