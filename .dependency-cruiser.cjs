/**
 * The import graph's rules (`npm run lint:deps`, part of `npm run lint`): no cycles, type-only imports
 * included, and the layers of the code map (docs/design.md, contracts/README.md), each depending only down:
 *
 *   src/server.ts, src/main.ts, src/config.ts, src/check.ts, src/banner.ts (wiring)  →  src/api  →  the core (src/)  →  contracts/
 *   activities/  →  the core, contracts/         workflows/  →  contracts/ only
 *
 * src/temporal/worker.ts names the workflows' folder for the worker to bundle (`require.resolve`), and
 * takes the activities from the wiring: the core imports neither. src/config.ts merges the areas'
 * settings (src/<area>/settings.ts) and reads the environment: every other module gets its settings as a
 * value, so only the wiring imports it.
 */
const WIRING = '^src/(server|main|config|check|banner)\\.ts$';

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
      name: 'contracts-import-no-layer',
      comment:
        'contracts/ is the bottom layer: Temporal definitions and plain types, with the tool rules’ type ' +
        'from src/schemas (type-only). It does no I/O: workflow code imports it.',
      severity: 'error',
      from: { path: '^contracts/' },
      to: {
        pathNot: [
          '^contracts/',
          '^src/schemas/tool-rules\\.ts$',
          '^node_modules/@temporalio/(workflow|common)/',
        ],
      },
    },
    {
      name: 'contracts-import-schemas-types-only',
      comment: 'zod stays out of contracts/ and so out of the workflow bundle: types only from src/schemas.',
      severity: 'error',
      from: { path: '^contracts/' },
      to: { path: '^src/schemas/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'workflows-import-contracts-only',
      comment:
        'Workflow code is deterministic and bundled: @temporalio/workflow, contracts/ and itself, ' +
        'types included (proxy the activity interfaces of contracts/activities.ts).',
      severity: 'error',
      from: { path: '^workflows/' },
      to: { pathNot: ['^workflows/', '^contracts/', '^node_modules/@temporalio/(workflow|common)/'] },
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
      to: { path: ['^activities/', '^workflows/', WIRING] },
    },
    {
      name: 'api-only-from-wiring',
      comment: 'The core knows no HTTP: it throws the errors of src/errors.ts, and src/api answers them.',
      severity: 'error',
      from: { path: '^(src|activities|workflows|contracts)/', pathNot: ['^src/api/', WIRING] },
      to: { path: '^src/api/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|coverage|data|\\.tools)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
