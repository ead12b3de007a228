import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { eventually } from './helpers/eventually';
import { toFile } from '@letta-ai/letta-client';
import { useAgentServer } from './helpers/agent-server';
import { stubEmbedding, type ChatRequest } from './helpers/openai-stub';
import { toolReturnsOf } from './helpers/tool-returns';
import { showFileToAgents } from '../src/memory/file-views';

const LIGHTHOUSE_PDF = fs.readFileSync(path.join(__dirname, 'fixtures/folders/lighthouse.pdf'));

const EMBEDDING = {
  embedding_endpoint_type: 'openai',
  embedding_endpoint: null,
  embedding_model: 'text-embedding-3-small',
  embedding_dim: 1536,
  embedding_chunk_size: 300,
  batch_size: 32,
  handle: 'openai/text-embedding-3-small',
};

interface TestFile {
  name: string;
  content: string;
  type?: string;
  /** The passages it was chunked into (default: one per paragraph). */
  chunks?: string[];
}

/**
 * Letta's folders, uploads and ingestion through the agent's file tools: attaching and detaching
 * folders, the files' views, `open_files`, `grep_files` and `semantic_search_files` called by the model,
 * and the open files in the prompt the model gets.
 */
describe('file tools', () => {
  const h = useAgentServer('openai');

  /** A folder whose files have completed ingestion, written as the ingestion workflow leaves them. */
  async function makeFolder(name: string, files: TestFile[], extra: { instructions?: string } = {}) {
    const db = h.server.db;
    const archiveId = `archive-${randomUUID()}`;
    const folderId = `source-${randomUUID()}`;
    await db.query(`INSERT INTO archives (id, name, embedding_config) VALUES ($1, $2, $3)`, [
      archiveId,
      name,
      JSON.stringify(EMBEDDING),
    ]);
    await db.query(
      `INSERT INTO folders (id, name, description, instructions, embedding_config, archive_id)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [
        folderId,
        name,
        `The ${name} folder`,
        extra.instructions ?? null,
        JSON.stringify(EMBEDDING),
        archiveId,
      ],
    );
    const ids: string[] = [];
    for (const file of files) ids.push(await addFile(folderId, archiveId, name, file));
    return { folderId, archiveId, fileIds: ids };
  }

  async function addFile(folderId: string, archiveId: string, folderName: string, file: TestFile) {
    const db = h.server.db;
    const fileId = `file-${randomUUID()}`;
    await db.query(
      `INSERT INTO files (id, folder_id, file_name, original_file_name, file_type, file_size,
         processing_status, content, total_chunks, chunks_embedded)
       VALUES ($1, $2, $3, $4, $5, $6, 'completed', $7, $8, $8)`,
      [
        fileId,
        folderId,
        `${folderName}/${file.name}`,
        file.name,
        file.type ?? 'text/plain',
        file.content.length,
        file.content,
        (file.chunks ?? file.content.split('\n\n')).length,
      ],
    );
    for (const [index, text] of (file.chunks ?? file.content.split('\n\n')).entries()) {
      await db.query(
        `INSERT INTO archival_passages (id, archive_id, text, tags, embedding, embedding_config, file_id, chunk_index)
         VALUES ($1, $2, $3, '{}', $4::real[], $5, $6, $7)`,
        [
          `passage-${randomUUID()}`,
          archiveId,
          text,
          stubEmbedding(text),
          JSON.stringify(EMBEDDING),
          fileId,
          index,
        ],
      );
    }
    return fileId;
  }

  const newAgent = (extra: Record<string, unknown> = {}) =>
    h.client.agents.create({ model: 'openai/gpt-4o-mini', ...extra });

  const toolNames = async (agentId: string) =>
    (await h.client.agents.tools.list(agentId)).getPaginatedItems().map((t) => t.name);

  const systemPromptOf = (request: ChatRequest) => String(request.messages[0].content);

  const NOTES = [
    'Project Falcon kickoff notes',
    '',
    'The launch date is March 3.',
    'Owner: Dana',
    'Budget: 40000 dollars',
  ].join('\n');
  const RECIPES = ['Pancakes need flour, eggs and milk.', '', 'Bake the bread at 220 degrees.'].join('\n');

  it('attaches a folder: the file tools, a view of each file, the folder listed; detaching removes them', async () => {
    const { folderId, fileIds } = await makeFolder('docs', [
      { name: 'notes.txt', content: NOTES },
      { name: 'recipes.txt', content: RECIPES },
    ]);
    const agent = await newAgent();
    expect(await toolNames(agent.id)).not.toContain('open_files');

    await h.client.agents.folders.attach(folderId, { agent_id: agent.id });
    expect(await toolNames(agent.id)).toEqual(
      expect.arrayContaining(['open_files', 'grep_files', 'semantic_search_files']),
    );
    const folders = (await h.client.agents.folders.list(agent.id)).getPaginatedItems();
    expect(folders).toEqual([
      expect.objectContaining({ id: folderId, name: 'docs', embedding_config: expect.any(Object) }),
    ]);
    const files = (await h.client.agents.files.list(agent.id)).getPaginatedItems();
    expect(files.map((f) => [f.file_name, f.folder_name, f.is_open]).sort()).toEqual([
      ['docs/notes.txt', 'docs', true],
      ['docs/recipes.txt', 'docs', true],
    ]);
    expect(files.find((f) => f.file_id === fileIds[0])?.visible_content).toBe(
      '[Viewing file start (out of 4 lines)]\n1: Project Falcon kickoff notes\n2: The launch date is March 3.\n3: Owner: Dana\n4: Budget: 40000 dollars',
    );
    const state = await h.client.agents.retrieve(agent.id, { include: ['agent.sources'] });
    expect(state.sources.map((s) => s.id)).toEqual([folderId]);
    expect(state).toMatchObject({ max_files_open: 10, per_file_view_window_char_limit: 25000 });

    // The close and open routes, and what the agents.files list says of them.
    await h.client.agents.files.close(fileIds[1], { agent_id: agent.id });
    expect(
      (await h.client.agents.files.list(agent.id, { is_open: true }))
        .getPaginatedItems()
        .map((f) => f.file_id),
    ).toEqual([fileIds[0]]);
    expect(await h.client.agents.files.open(fileIds[1], { agent_id: agent.id })).toEqual([]);
    expect(await h.client.agents.files.closeAll(agent.id)).toHaveLength(2);

    await h.client.agents.folders.detach(folderId, { agent_id: agent.id });
    const after = await toolNames(agent.id);
    expect(after).not.toContain('open_files');
    expect(after).not.toContain('grep_files');
    expect(after).not.toContain('semantic_search_files');
    expect((await h.client.agents.files.list(agent.id)).getPaginatedItems()).toEqual([]);
    expect((await h.client.agents.folders.list(agent.id)).getPaginatedItems()).toEqual([]);
  });

  it('renders the folders and open files into the system prompt as Letta does', async () => {
    const { folderId } = await makeFolder(
      'handbook',
      [
        { name: 'a.txt', content: 'alpha line\nsecond line' },
        { name: 'b.txt', content: 'beta' },
      ],
      { instructions: 'Cite the file you used.' },
    );
    const agent = await newAgent({ max_files_open: 1 });
    await h.client.agents.folders.attach(folderId, { agent_id: agent.id });
    const before = h.stub.requests.length;
    await h.client.agents.messages.create(agent.id, { messages: [{ role: 'user', content: 'hi' }] });
    const prompt = systemPromptOf(h.stub.requests[before]);
    const directories = prompt.slice(prompt.indexOf('<directories>'), prompt.indexOf('</directories>') + 14);
    expect(directories).toBe(
      [
        '<directories>',
        '<file_limits>',
        '- current_files_open=1',
        '- max_files_open=1',
        '</file_limits>',
        '<directory name="handbook">',
        '<description>The handbook folder</description>',
        '<instructions>Cite the file you used.</instructions>',
        '<file status="open" name="handbook/a.txt">',
        '<metadata>',
        '- read_only=true',
        '- chars_current=66',
        '- chars_limit=25000',
        '</metadata>',
        '<value>',
        '[Viewing file start (out of 2 lines)]',
        '1: alpha line',
        '2: second line',
        '</value>',
        '</file>',
        '<file status="closed" name="handbook/b.txt">',
        '<metadata>',
        '- read_only=true',
        '- chars_current=0',
        '- chars_limit=25000',
        '</metadata>',
        '</file>',
        '</directory>',
        '</directories>',
      ].join('\n'),
    );
    // After the memory blocks and before the memory metadata.
    expect(prompt.indexOf('</memory_blocks>')).toBeLessThan(prompt.indexOf('<directories>'));
    expect(prompt.indexOf('</directories>')).toBeLessThan(prompt.indexOf('<memory_metadata>'));
  });

  it('runs open_files, grep_files and semantic_search_files for the model, with Letta’s answers', async () => {
    const { folderId } = await makeFolder('project', [
      { name: 'notes.txt', content: NOTES },
      { name: 'recipes.txt', content: RECIPES },
    ]);
    const agent = await newAgent({ max_files_open: 2 });
    await h.client.agents.folders.attach(folderId, { agent_id: agent.id });
    h.stub.enqueue(
      { toolCalls: [{ name: 'grep_files', arguments: { pattern: 'launch|bread' } }] },
      {
        toolCalls: [
          { name: 'grep_files', arguments: { pattern: 'owner', include: '*notes*', context_lines: 0 } },
        ],
      },
      { toolCalls: [{ name: 'grep_files', arguments: { pattern: 'zebra' } }] },
      {
        toolCalls: [
          {
            name: 'open_files',
            arguments: { file_requests: [{ file_name: 'project/notes.txt', offset: 1, length: 2 }] },
          },
        ],
      },
      {
        toolCalls: [
          { name: 'open_files', arguments: { file_requests: [{ file_name: 'project/missing.txt' }] } },
        ],
      },
      {
        toolCalls: [{ name: 'semantic_search_files', arguments: { query: 'bake bread degrees', limit: 1 } }],
      },
      { text: 'Done.' },
    );
    const before = h.stub.requests.length;
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'look into the files' }],
    });
    const [grep, grepInclude, grepNone, opened, missing, semantic] = toolReturnsOf(response.messages);
    expect(grep).toMatchObject({ status: 'success' });
    expect(grep.tool_return).toBe(
      [
        'Found 2 total matches across 2 files (showing matches 1-2 of 2)',
        '='.repeat(80),
        '\nFiles with matches:',
        '  - project/notes.txt: 1 matches',
        '  - project/recipes.txt: 1 matches',
        '',
        '\n=== project/notes.txt:2 ===\n  1: Project Falcon kickoff notes\n> 2: The launch date is March 3.\n  3: Owner: Dana',
        '\n=== project/recipes.txt:2 ===\n  1: Pancakes need flour, eggs and milk.\n> 2: Bake the bread at 220 degrees.',
        '',
        'No more matches to show.',
      ].join('\n'),
    );
    expect(grepInclude.tool_return).toContain('=== project/notes.txt:3 ===\n> 3: Owner: Dana');
    expect(grepInclude.tool_return).not.toContain('recipes');
    expect(grepNone.tool_return).toBe("No matches found for pattern: 'zebra'");
    expect(opened).toMatchObject({
      status: 'success',
      tool_return: '* Opened project/notes.txt (lines 2-3) (previously full file)',
    });
    expect(missing.status).toBe('error');
    expect(missing.tool_return).toBe(
      "project/missing.txt not attached - did you get the filename correct? Currently you have the following files attached: ['project/notes.txt', 'project/recipes.txt']",
    );
    expect(semantic).toMatchObject({ status: 'success' });
    expect(semantic.tool_return).toBe(
      [
        "Found 1 semantic matches in 1 file for query: 'bake bread degrees'",
        '='.repeat("Found 1 semantic matches in 1 file for query: 'bake bread degrees'".length),
        '\n=== project/recipes.txt (passage #1) ===\n  Bake the bread at 220 degrees.',
      ].join('\n'),
    );
    // The model's next prompt shows the range it opened.
    const afterOpen = systemPromptOf(h.stub.requests[before + 4]);
    expect(afterOpen).toContain(
      '<value>\n[Viewing lines 2 to 3 (out of 4 lines)]\n2: The launch date is March 3.\n3: Owner: Dana\n</value>',
    );
  });

  it('keeps at most max_files_open files open, closing the least recently used', async () => {
    const { folderId, archiveId } = await makeFolder('many', [
      { name: 'one.txt', content: 'first file' },
      { name: 'two.txt', content: 'second file' },
      { name: 'three.txt', content: 'third file' },
    ]);
    const agent = await newAgent({ max_files_open: 2 });
    await h.client.agents.folders.attach(folderId, { agent_id: agent.id });
    const open = async () =>
      (await h.client.agents.files.list(agent.id, { is_open: true }))
        .getPaginatedItems()
        .map((f) => f.file_name)
        .sort();
    // Letta opens the first max_files_open of a folder's files when it is attached.
    expect(await open()).toEqual(['many/one.txt', 'many/two.txt']);

    h.stub.enqueue(
      { toolCalls: [{ name: 'grep_files', arguments: { pattern: 'second' } }] },
      {
        toolCalls: [{ name: 'open_files', arguments: { file_requests: [{ file_name: 'many/three.txt' }] } }],
      },
      {
        toolCalls: [
          {
            name: 'open_files',
            arguments: {
              file_requests: [
                { file_name: 'many/one.txt' },
                { file_name: 'many/two.txt' },
                { file_name: 'many/three.txt' },
              ],
            },
          },
        ],
      },
      {
        toolCalls: [
          {
            name: 'open_files',
            arguments: { file_requests: [{ file_name: 'many/one.txt' }], close_all_others: true },
          },
        ],
      },
      { text: 'ok' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'open them' }],
    });
    const [, three, tooMany, closeAll] = toolReturnsOf(response.messages);
    // grep touched two.txt, so one.txt is the least recently used.
    expect(three.tool_return).toBe(
      '* Opened many/three.txt\nNote: Closed 1 least recently used file(s) due to open file limit: many/one.txt',
    );
    expect(tooMany).toMatchObject({
      status: 'error',
      tool_return: 'Cannot open 3 files: exceeds configured maximum limit of 2 files',
    });
    expect(closeAll.tool_return).toMatch(
      /^\* Opened many\/one\.txt\nNote: Closed 2 file\(s\) due to close_all_others=True: many\/(two|three)\.txt, many\/(two|three)\.txt$/,
    );
    expect(await open()).toEqual(['many/one.txt']);

    // A file that completes ingestion later is opened in the agent's context (ingestion calls this).
    const fileId = await addFile(folderId, archiveId, 'many', { name: 'four.txt', content: 'fourth file' });
    await showFileToAgents(h.server.db, fileId);
    expect(await open()).toEqual(['many/four.txt', 'many/one.txt']);
    const fileId5 = await addFile(folderId, archiveId, 'many', { name: 'five.txt', content: 'fifth file' });
    await showFileToAgents(h.server.db, fileId5);
    expect(await open()).toEqual(['many/five.txt', 'many/four.txt']);
  });

  it('works on a text file and a PDF uploaded through the official client once they are ingested', async () => {
    const folder = await h.client.folders.create({
      name: `uploads-${randomUUID().slice(0, 8)}`,
      embedding: 'openai/text-embedding-3-small',
    });
    const agent = await newAgent();
    // Attached before the uploads: each file opens in the agent's context when its ingestion completes.
    await h.client.agents.folders.attach(folder.id, { agent_id: agent.id });
    const uploads = [
      await h.client.folders.files.upload(folder.id, {
        file: await toFile(Buffer.from(NOTES), 'falcon.txt', { type: 'text/plain' }),
      }),
      await h.client.folders.files.upload(folder.id, {
        file: await toFile(LIGHTHOUSE_PDF, 'lighthouse.pdf', { type: 'application/pdf' }),
      }),
    ];
    for (const uploaded of uploads) {
      const done = await eventually(
        () => h.client.folders.files.retrieve(uploaded.id, { folder_id: folder.id }),
        (file) => file.processing_status === 'completed' || file.processing_status === 'error',
        30_000,
      );
      expect(done.processing_status).toBe('completed');
    }
    const files = (await h.client.agents.files.list(agent.id)).getPaginatedItems();
    expect(files.map((f) => f.file_id).sort()).toEqual(uploads.map((u) => u.id).sort());
    const nameOf = (id: string) => files.find((f) => f.file_id === id)!.file_name;
    const [notes, pdf] = uploads.map((u) => nameOf(u.id));

    h.stub.enqueue(
      { toolCalls: [{ name: 'grep_files', arguments: { pattern: 'budget' } }] },
      { toolCalls: [{ name: 'semantic_search_files', arguments: { query: 'launch date March' } }] },
      {
        toolCalls: [{ name: 'open_files', arguments: { file_requests: [{ file_name: notes, offset: 3 }] } }],
      },
      { toolCalls: [{ name: 'grep_files', arguments: { pattern: 'lighthouse keeper', include: '*.pdf' } }] },
      { toolCalls: [{ name: 'semantic_search_files', arguments: { query: 'keeper logs every ship' } }] },
      { toolCalls: [{ name: 'open_files', arguments: { file_requests: [{ file_name: pdf }] } }] },
      { text: 'ok' },
    );
    const response = await h.client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'read them' }],
    });
    const [grep, semantic, opened, pdfGrep, pdfSemantic, pdfOpened] = toolReturnsOf(response.messages);
    expect(grep.tool_return).toContain(`=== ${notes}:4 ===\n  3: Owner: Dana\n> 4: Budget: 40000 dollars`);
    expect(semantic.tool_return).toMatch(
      /^Found \d+ semantic matches in \d+ files? for query: 'launch date March'/,
    );
    expect(semantic.tool_return).toContain('The launch date is March 3.');
    expect(opened.tool_return).toBe(`* Opened ${notes} (lines 4-end) (previously full file)`);
    expect(pdfGrep.tool_return).toContain(`=== ${pdf}:`);
    expect(pdfGrep.tool_return).toContain('The durable lighthouse keeper logs every ship');
    expect(pdfGrep.tool_return).not.toContain(notes);
    expect(pdfSemantic.tool_return).toContain(pdf);
    expect(pdfSemantic.tool_return).toContain('lighthouse keeper logs every ship');
    expect(pdfOpened.tool_return).toContain(`Opened ${pdf}`);
  });

  it('answers 404 for an unknown folder or agent', async () => {
    const agent = await newAgent();
    await expect(
      h.client.agents.folders.attach('source-00000000-0000-4000-8000-000000000000', { agent_id: agent.id }),
    ).rejects.toMatchObject({ status: 404 });
    await expect(
      h.client.agents.files.list('agent-00000000-0000-4000-8000-000000000000'),
    ).rejects.toMatchObject({
      status: 404,
    });
  });
});
