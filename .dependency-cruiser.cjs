/**
 * The import graph's rules (`npm run lint:deps`, part of `npm run lint`): no cycles, type-only imports
 * included, and the layers of the code map (docs/design.md, contracts/README.md), each depending only down:
 *
 *   wiring (src/server.ts, main.ts, config.ts, …)  →  src/api  →  src/agent  →  …  →  the base files  →  contracts/
 *   activities/  →  the core, contracts/         workflows/  →  contracts/ only
 *
 * LAYERS lists the layers of src/ bottom to top: a module may import its own layer and those below it,
 * never one above. docs/design.md's code map shows the same list, one row per layer, and
 * test/code-map.test.ts holds its "it may import" column to `mayImport` below.
 *
 * src/temporal/worker.ts names the workflows' folder for the worker to bundle (`require.resolve`), and
 * takes the activities from the wiring: the core imports neither. src/config.ts merges the areas'
 * settings (src/<area>/settings.ts) and reads the environment: every other module gets its settings as a
 * value, so only the wiring imports it.
 */

/**
 * The files at the top of src/ that everything may import: plain values, errors, paths, logging, and
 * the building blocks of every area's settings with the process's own.
 */
const BASE_FILES = [
  'ids',
  'errors',
  'masking',
  'paths',
  'secrets',
  'logger',
  'time',
  'context-ids',
  'settings-fields',
  'process-settings',
];

/**
 * Bottom to top. A layer is one folder of src/, or the files at the top of src/: the base files, and
 * the wiring (every other one: start-up composes the layers there).
 */
const LAYERS = [
  { name: 'contracts', label: '`contracts/`', path: '^contracts/' },
  {
    name: 'base',
    label: BASE_FILES.map((file) => `\`src/${file}.ts\``).join(', '),
    path: `^src/(${BASE_FILES.join('|')})\\.ts$`,
  },
  ...[
    'returns',
    'schemas',
    'llm',
    'db',
    'observability',
    'net',
    'sandbox',
    'mcp',
    'memory',
    'access',
    'tools',
    'temporal',
    'approvals',
    'agent',
    'api',
  ].map((folder) => ({ name: folder, label: `\`src/${folder}/\``, path: `^src/${folder}/` })),
  {
    name: 'wiring',
    label: 'the other files of `src/`: `server.ts`, `main.ts`, `check.ts`, `banner.ts`, `config.ts`',
    path: `^src/(?!(${BASE_FILES.join('|')})\\.ts$)[^/]+$`,
  },
];

/** What the code map says a layer may import: the layers below it, nearest first. */
function mayImport(name) {
  const index = LAYERS.findIndex((layer) => layer.name === name);
  if (name === 'contracts') return '`@temporalio/workflow`, `@temporalio/common`';
  if (name === 'wiring') return 'everything';
  return LAYERS.slice(0, index)
    .reverse()
    .map((layer) => (layer.name === 'base' ? 'the base files' : layer.label))
    .join(', ');
}

const WIRING = LAYERS.find((layer) => layer.name === 'wiring').path;

/** One rule per layer of src/: nothing above it. */
const layerRules = LAYERS.slice(1, -1).map((layer, index) => ({
  name: `layer-${layer.name}`,
  comment: `${layer.label} imports only the layers below it: ${mayImport(layer.name)}.`,
  severity: 'error',
  from: { path: layer.path },
  to: {
    path: LAYERS.slice(index + 2).map((above) => above.path),
  },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'A cycle means a definition two layers share lives in one of them: move it down to contracts/.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'src-folder-in-a-layer',
      comment: 'Every folder of src/ has its place in LAYERS, and so its row in the code map.',
      severity: 'error',
      from: { path: '^src/[^/]+/', pathNot: LAYERS.map((layer) => layer.path) },
      to: {},
    },
    ...layerRules,
    {
      name: 'contracts-import-no-layer',
      comment:
        'contracts/ is the bottom layer: Temporal definitions and plain types. It does no I/O and imports ' +
        'nothing of src/: workflow code imports it.',
      severity: 'error',
      from: { path: '^contracts/' },
      to: { pathNot: ['^contracts/', '(^|/)node_modules/@temporalio/(workflow|common)/'] },
    },
    {
      name: 'workflows-import-contracts-only',
      comment:
        'Workflow code is deterministic and bundled: @temporalio/workflow, contracts/ and itself, ' +
        'types included (proxy the activity interfaces of contracts/activities.ts).',
      severity: 'error',
      from: { path: '^workflows/' },
      to: { pathNot: ['^workflows/', '^contracts/', '(^|/)node_modules/@temporalio/(workflow|common)/'] },
    },
    {
      name: 'activities-not-upward',
      comment: 'Activities use the core and contracts/, never workflow code or the HTTP layer.',
      severity: 'error',
      from: { path: '^activities/' },
      to: { path: ['^workflows/', '^src/api/', WIRING] },
    },
    {
      name: 'core-not-activities-or-workflows',
      comment: 'The core reaches workflows and activities through contracts/; only the wiring imports them.',
      severity: 'error',
      from: { path: '^src/', pathNot: WIRING },
      to: { path: ['^activities/', '^workflows/'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|coverage|data|\\.tools)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};

// For test/code-map.test.ts; not enumerable, as dependency-cruiser takes the rest as its options.
Object.defineProperties(module.exports, {
  LAYERS: { value: LAYERS },
  mayImport: { value: mayImport },
});
