import type { Migration } from './migration';

/**
 * Agents, their memory blocks and tools, the transcript, and runs. Large or private things (message
 * text, tool arguments and returns) live here so that workflow histories hold only ids.
 */
export const agents: Migration = {
  version: 2,
  name: 'agents, blocks, tools, messages, runs',
  sql: `
    CREATE TABLE agents (
      id text PRIMARY KEY,
      name text NOT NULL,
      agent_type text NOT NULL,
      description text,
      system text NOT NULL,
      model text,
      llm_config jsonb NOT NULL,
      embedding_config jsonb,
      tool_rules jsonb NOT NULL DEFAULT '[]',
      tags text[] NOT NULL DEFAULT '{}',
      metadata jsonb,
      timezone text NOT NULL DEFAULT 'UTC',
      last_stop_reason text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE blocks (
      id text PRIMARY KEY,
      label text NOT NULL,
      value text NOT NULL,
      char_limit integer NOT NULL,
      description text,
      read_only boolean NOT NULL DEFAULT false,
      hidden boolean,
      metadata jsonb,
      tags text[],
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE agent_blocks (
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      block_id text NOT NULL REFERENCES blocks(id) ON DELETE CASCADE,
      position integer NOT NULL,
      PRIMARY KEY (agent_id, block_id)
    );

    CREATE TABLE tools (
      id text PRIMARY KEY,
      name text NOT NULL UNIQUE,
      tool_type text NOT NULL,
      description text,
      source_type text,
      source_code text,
      json_schema jsonb NOT NULL,
      args_json_schema jsonb,
      tags text[] NOT NULL DEFAULT '{}',
      return_char_limit integer NOT NULL DEFAULT 50000,
      pip_requirements jsonb,
      npm_requirements jsonb,
      default_requires_approval boolean,
      enable_parallel_execution boolean NOT NULL DEFAULT false,
      metadata jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE agent_tools (
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      tool_id text NOT NULL REFERENCES tools(id) ON DELETE CASCADE,
      PRIMARY KEY (agent_id, tool_id)
    );

    CREATE TABLE agent_secrets (
      id text PRIMARY KEY,
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      key text NOT NULL,
      value text NOT NULL,
      description text,
      UNIQUE (agent_id, key)
    );

    CREATE TABLE runs (
      id text PRIMARY KEY,
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      status text NOT NULL,
      stop_reason text,
      background boolean NOT NULL DEFAULT false,
      metadata jsonb,
      request_config jsonb,
      workflow_id text NOT NULL,
      usage jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz
    );
    CREATE INDEX runs_agent ON runs (agent_id, created_at);

    -- One row per stored message; seq orders an agent's transcript. Assistant messages carry their tool
    -- calls, tool messages their returns. idempotency_key makes an activity's retry a no-op.
    CREATE TABLE messages (
      seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
      id text PRIMARY KEY,
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      run_id text,
      step_id text,
      role text NOT NULL,
      content jsonb,
      reasoning text,
      tool_calls jsonb,
      tool_returns jsonb,
      approvals jsonb,
      name text,
      otid text,
      sender_id text,
      metadata jsonb,
      text_index text NOT NULL DEFAULT '',
      idempotency_key text UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX messages_agent ON messages (agent_id, seq);
    CREATE INDEX messages_run ON messages (run_id, seq);
    CREATE INDEX messages_text ON messages USING gin (to_tsvector('english', text_index));

    -- What each tool call returned, keyed by tool call id: a retried activity finds its own result
    -- instead of running the tool again.
    CREATE TABLE tool_executions (
      tool_call_id text PRIMARY KEY,
      run_id text NOT NULL,
      agent_id text NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
      tool_name text NOT NULL,
      status text NOT NULL,
      func_return text NOT NULL,
      stdout jsonb,
      stderr jsonb,
      created_at timestamptz NOT NULL DEFAULT now()
    );
  `,
};
