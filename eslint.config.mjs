// ESLint flat config: typescript-eslint's recommended rules, plus the import rules of the code map
// (docs/design.md, "Code map"; the whole graph's rules are in .dependency-cruiser.cjs): the core never
// imports the HTTP layer, and workflow code imports no Node built-ins and nothing that does I/O (they
// fail to bundle, or would break determinism).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Code in the workflow bundle (workflows/ and the contracts/ it imports) runs in the deterministic
// sandbox: no Node built-ins, nothing that does I/O, no zod (payloads are plain types).
const bundled = [
  {
    group: ['node:*', 'fs', 'path', 'child_process', 'net', 'crypto', 'os', 'http', 'https'],
    message: 'Workflow code runs in the deterministic sandbox: no Node built-ins.',
  },
  {
    group: [
      'pg',
      '@electric-sql/*',
      'express',
      'openai',
      '@anthropic-ai/*',
      'e2b',
      '@modelcontextprotocol/*',
    ],
    message: 'Workflow code does no I/O: call an activity.',
  },
  {
    group: ['@temporalio/client', '@temporalio/worker', '@temporalio/activity'],
    message: 'Workflow code uses @temporalio/workflow (and @temporalio/common) only.',
  },
  {
    group: ['zod'],
    message: 'zod stays at the HTTP edge and out of the workflow bundle (contracts/README.md).',
  },
  {
    regex: '^(\\.\\.?/)+(src/)?api(/|$)',
    message: 'The core knows no HTTP: throw an error of src/errors.ts, and let src/api answer it.',
  },
];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'data/', '.tools/', 'coverage/', '.venv-*/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Functions are short (docs/design.md, "Long functions"): one that must stay longer names its reason
    // in an eslint-disable-next-line comment and is listed there. Tests, bench and scripts are exempt.
    files: ['src/**/*.ts', 'activities/**/*.ts', 'workflows/**/*.ts', 'contracts/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: false, skipComments: false }],
    },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    // The approval page's script (public/approvals/): an ES module run by browsers, as served.
    files: ['public/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: Object.fromEntries(
        [
          'AbortController',
          'CSS',
          'clearInterval',
          'document',
          'fetch',
          'sessionStorage',
          'setInterval',
          'setTimeout',
          'TextDecoderStream',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
  {
    // The core (everything but the HTTP layer, its wiring in server.ts, main.ts and config.ts, and
    // tests) knows no HTTP: it throws its own errors (src/errors.ts) and never imports src/api.
    files: ['src/**/*.ts', 'activities/**/*.ts', 'workflows/**/*.ts', 'contracts/**/*.ts'],
    ignores: ['src/api/**', 'src/server.ts', 'src/main.ts', 'src/config.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '^(\\.\\.?/)+(src/)?api(/|$)',
              message: 'The core knows no HTTP: throw an error of src/errors.ts, and let src/api answer it.',
            },
          ],
        },
      ],
    },
  },
  {
    // Workflow code imports contracts/ for everything it shares with the other layers: the activity
    // interfaces it proxies, the payload types, the signals and updates.
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            ...bundled,
            {
              regex: '^(\\.\\./)+(activities|src)(/|$)',
              message:
                'Workflow code imports contracts/ (activity interfaces, payload types), not activities or the core.',
            },
          ],
        },
      ],
    },
  },
  {
    // contracts/ is the bottom layer, and workflow code imports it: the same rules, and nothing above it.
    files: ['contracts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            ...bundled,
            {
              regex: '^\\.\\./(activities|workflows)(/|$)',
              message: 'contracts/ is the bottom layer: activities and workflows import it, not the reverse.',
            },
            {
              regex: '^\\.\\./src(/|$)',
              allowTypeImports: true,
              message:
                'contracts/ is in the workflow bundle: it may import the types of src/schemas, not code.',
            },
          ],
        },
      ],
    },
  },
);
