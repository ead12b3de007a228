// ESLint flat config: typescript-eslint's recommended rules, plus the import rules of the code map
// (docs/design.md, "Code map"): the core never imports the HTTP layer, and workflow code imports no Node built-ins and
// nothing that does I/O (they fail to bundle, or would break determinism).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'data/', '.tools/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
  {
    // The core (everything but the HTTP layer, its wiring in server.ts and main.ts, and tests) knows
    // no HTTP: it throws its own errors (src/errors.ts) and never imports src/api.
    files: ['src/**/*.ts', 'activities/**/*.ts', 'workflows/**/*.ts'],
    ignores: ['src/api/**', 'src/server.ts', 'src/main.ts'],
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
    // Workflow code runs in the deterministic sandbox: no Node built-ins and nothing that does I/O.
    // It reaches activities through proxies, so it may import their types, never their code.
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
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
              // Their contracts (activities/contracts.ts) included: zod stays out of the workflow bundle.
              regex: '^(\\.\\./)+(activities|src)(/|$)',
              allowTypeImports: true,
              message:
                'Workflow code may import the types of activities, contracts and schemas, not their code.',
            },
            {
              group: ['zod'],
              allowTypeImports: true,
              message:
                'Workflow code uses the types of the schemas (activities/contracts.ts), not zod itself.',
            },
            {
              regex: '^(\\.\\.?/)+(src/)?api(/|$)',
              message: 'The core knows no HTTP: throw an error of src/errors.ts, and let src/api answer it.',
            },
          ],
        },
      ],
    },
  },
);
