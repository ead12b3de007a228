/** Jest runs TypeScript through swc (fast, no type-check: `npm run lint` type-checks). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }],
    // e2b requires chalk 5, and the MCP SDK's private_key_jwt jose 6, which are ES modules only: Node
    // loads them natively, Jest's runtime needs CommonJS.
    '/(chalk|jose)/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(.*/)?(chalk|jose)/)'],
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  setupFilesAfterEnv: ['<rootDir>/test/setup-temporal-runtime.ts'],
  testTimeout: 120_000,
  // Two files at once, even on two cores: the suite mostly waits (on Temporal, on sandboxes, on
  // timers), and it takes about half the time of one file at a time.
  maxWorkers: 2,
};
