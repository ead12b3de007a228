/**
 * TypeScript tools in the local sandbox: transpiled here, run by runner.mjs on a node under /usr (the
 * only system folder the sandbox sees), with their npm requirements mounted read-only at
 * /node_modules, where the tool's imports resolve from /tmp.
 */
import path from 'node:path';
import type { SandboxSettings } from './settings';
import { projectRoot } from '../paths';
import { environmentsDir } from './install-process';
import { reachableFolder } from './reach';
import { nodeModulesFor, type NodeEnvOptions } from './node-env';
import type { NpmRequirement, SandboxCommand, ToolJob } from './types';
import { transpileTool } from './typescript';

const RUNNER_DIR = reachableFolder(path.join(projectRoot, 'src', 'sandbox', 'node'));

export interface NodeRuntimeOptions {
  node: string;
  /** V8's heap limit: an address-space rlimit would stop node from starting at all. */
  maxOldSpaceMb: number;
  npm: NodeEnvOptions;
}

export function nodeRuntimeOptions(config: SandboxSettings): NodeRuntimeOptions {
  return {
    node: config.SANDBOX_NODE,
    maxOldSpaceMb: config.SANDBOX_NODE_MAX_OLD_SPACE_MB,
    npm: {
      envDir: environmentsDir(config),
      npm: 'npm',
      registry: config.NPM_REGISTRY_URL,
      installTimeoutMs: config.NPM_INSTALL_TIMEOUT_MS,
    },
  };
}

/** The job fields that choose a tool's runtime, from its stored or submitted fields. */
export function runtimeFields(tool: {
  source_type?: string | null;
  npm_requirements?: unknown[] | null;
}): Pick<ToolJob, 'language' | 'npmRequirements'> {
  if (tool.source_type !== 'typescript') return { language: 'python' };
  return { language: 'typescript', npmRequirements: (tool.npm_requirements ?? []) as NpmRequirement[] };
}

/** Throws a ToolError when the source does not compile or its requirements do not install. */
export async function nodeCommand(job: ToolJob, options: NodeRuntimeOptions): Promise<SandboxCommand> {
  const { js, paramOrder } = transpileTool(job.source, job.name);
  const mounts = ['--ro-bind', RUNNER_DIR, '/runner'];
  if (job.npmRequirements?.length)
    mounts.push('--ro-bind', await nodeModulesFor(job.npmRequirements, options.npm), '/node_modules');
  return {
    mounts,
    env: {},
    argv: [options.node, `--max-old-space-size=${options.maxOldSpaceMb}`, '/runner/runner.mjs'],
    input: JSON.stringify({
      source: js,
      name: job.name,
      args: job.args,
      param_order: paramOrder,
      return_char_limit: job.returnCharLimit,
    }),
  };
}
