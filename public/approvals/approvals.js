// The approval page's script (docs/using-it.md, "The approval page"): plain DOM, no framework, no build.
//
// The page holds no data: it asks for the server's password or a scoped access token, keeps it in this
// tab's sessionStorage, and sends it as `Authorization: Bearer …` with every call of the approvals API.
// A browser never adds that header by itself, so another site cannot make a visitor's browser answer an
// approval (no CSRF). Data from the server goes into the page as text, never as HTML.
import { $, announce, h, showSignedIn, showWhetherOpen, signInRefusal } from './shared/page.js';

const STORED = { credential: 'letta-approvals.credential', approver: 'letta-approvals.approver' };
/** While the live stream is down, the list is fetched this often. */
const POLL_MS = 5_000;
const FIRST_RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;
const LIST_LIMIT = 100;

/** What a session knows, none of which outlives it. */
const sessionState = () => ({
  /** The waiting requests, newest first: `{ id, agentName, requestedAt, expiresAt, calls }`. */
  groups: undefined,
  selected: undefined,
  detail: undefined,
  /** A word on the request shown, `{ id, text }`: how this page's answer went. */
  notice: undefined,
  stream: undefined,
  poll: undefined,
});

const state = {
  /** The password or token signed in with: '' on a server without a password, null when signed out. */
  credential: sessionStorage.getItem(STORED.credential),
  /** Whether the server asks no password (it then answers on loopback only, to anyone there). */
  open: false,
  approver: sessionStorage.getItem(STORED.approver) ?? '',
  ...sessionState(),
  retryMs: FIRST_RETRY_MS,
};

class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

/** Letta's errors are `{ "detail": … }`, a text or a list of validation problems. */
function detailOf(body, status) {
  const detail = body?.detail;
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail))
    return detail.map((problem) => problem.msg ?? JSON.stringify(problem)).join('; ');
  return `The server answered ${status}`;
}

/** The credential as the API takes it; none on a server without a password, signed in without one. */
const authorization = () => (state.credential ? { authorization: `Bearer ${state.credential}` } : {});

async function api(path, { method = 'GET', body, headers = {} } = {}) {
  const response = await fetch(path, {
    method,
    cache: 'no-store',
    headers: {
      ...authorization(),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!response.ok) throw new ApiError(response.status, detailOf(json, response.status));
  return json;
}

// ---- Announcements and times -------------------------------------------------------------------

function ago(iso) {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (seconds < 60) return 'just now';
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  return hours < 48 ? `${hours} h ago` : `${Math.round(hours / 24)} days ago`;
}

function expiry(iso) {
  if (!iso) return 'never expires';
  const seconds = Math.round((Date.parse(iso) - Date.now()) / 1000);
  if (seconds <= 0) return 'expired';
  if (seconds < 3600) return `expires in ${Math.max(1, Math.round(seconds / 60))} min`;
  return `expires in ${Math.round(seconds / 3600)} h`;
}

const time = (iso, text) => h('time', { datetime: iso, title: new Date(iso).toLocaleString() }, text);

/** The arguments as the model sent them, indented when they are JSON. */
function prettyJson(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

const preview = (text) => (text.length > 120 ? `${text.slice(0, 119)}…` : text);

// ---- Signing in and out ------------------------------------------------------------------------

/** fetch sends headers as Latin-1 bytes: a name beyond that could not be sent as X-Letta-Approver. */
const SENDABLE_NAME = /^[\x20-\x7e\xa0-\xff]*$/;

async function signIn(event) {
  event.preventDefault();
  const error = $('login-error');
  const credential = $('credential').value.trim();
  const approver = $('approver').value.trim();
  error.textContent = '';
  if (!credential && !state.open) {
    error.textContent = 'Enter the server password or an access token.';
    return $('credential').focus();
  }
  if (!SENDABLE_NAME.test(approver)) {
    error.textContent = 'Your name can use Latin letters only: it travels in an HTTP header.';
    return $('approver').focus();
  }
  state.credential = credential;
  try {
    await api(`/v1/approvals/?limit=1`);
  } catch (failure) {
    state.credential = null;
    error.textContent =
      failure instanceof ApiError ? signInRefusal(failure.status, failure.message) : signInRefusal(0);
    return $('credential').focus();
  }
  state.approver = approver;
  sessionStorage.setItem(STORED.credential, credential);
  sessionStorage.setItem(STORED.approver, approver);
  $('credential').value = '';
  enterWorkspace();
}

function enterWorkspace() {
  showSignedIn(true);
  $('who').textContent = state.approver ? `Answering as ${state.approver}` : 'Signed in';
  $('waiting-title').focus();
  refresh();
  listen();
}

function signOut(message = '') {
  state.stream?.abort();
  clearInterval(state.poll);
  sessionStorage.removeItem(STORED.credential);
  Object.assign(state, { credential: null, ...sessionState() });
  showSignedIn(false);
  $('detail').replaceChildren();
  $('detail').hidden = true;
  $('login-error').textContent = message;
  $('approver').value = state.approver;
  $('credential').focus();
}

/** A refused credential ends the session; any other failure is shown where it happened. */
function handleFailure(failure, show) {
  if (failure instanceof ApiError && failure.status === 401)
    return signOut('The server no longer accepts this password or token: sign in again.');
  show(failure instanceof ApiError ? failure.message : 'The server could not be reached.');
}

// ---- The list ----------------------------------------------------------------------------------

/** Calls of one approval request are answered together, so the list shows requests. */
function groupsOf(items) {
  const groups = new Map();
  for (const item of items) {
    let group = groups.get(item.approval_request_id);
    if (!group) {
      group = {
        id: item.approval_request_id,
        agentName: item.agent_name || item.agent_id,
        requestedAt: item.requested_at,
        expiresAt: item.expires_at,
        calls: [],
      };
      groups.set(group.id, group);
    }
    group.calls.push(item);
  }
  // The list is by time; a request's calls are shown in the order the model made them.
  for (const group of groups.values())
    group.calls.sort(
      (a, b) => a.tool_call_ids.indexOf(a.tool_call_id) - b.tool_call_ids.indexOf(b.tool_call_id),
    );
  return [...groups.values()].sort((a, b) => Date.parse(b.requestedAt) - Date.parse(a.requestedAt));
}

let refreshing;
let refreshAgain = false;

/** Fetches the list; a refresh asked for while one runs runs once more after it. */
function refresh() {
  if (refreshing) {
    refreshAgain = true;
    return refreshing;
  }
  refreshing = (async () => {
    do {
      refreshAgain = false;
      await loadList();
    } while (refreshAgain && state.credential !== null);
  })().finally(() => (refreshing = undefined));
  return refreshing;
}

async function loadList() {
  if (state.credential === null) return; // signed out meanwhile
  let items;
  try {
    items = await api(`/v1/approvals/?limit=${LIST_LIMIT}&order=desc`);
  } catch (failure) {
    return handleFailure(
      failure,
      (text) => ($('list-error').textContent = `The list could not be loaded: ${text}`),
    );
  }
  $('list-error').textContent = '';
  const before = state.groups;
  state.groups = groupsOf(items);
  if (before) announceChanges(before, state.groups);
  renderList();
  if (items.length >= LIST_LIMIT) $('count').textContent += ` The newest ${LIST_LIMIT} calls are shown.`;
  // The request on show was answered elsewhere (or expired): show how it ended.
  const shown = state.detail;
  if (shown?.status === 'pending' && !state.groups.some((group) => group.id === shown.approval_request_id))
    await loadDetail(shown.approval_request_id);
}

function announceChanges(before, after) {
  const ids = (groups) => new Set(groups.map((group) => group.id));
  const [was, is] = [ids(before), ids(after)];
  const tools = (group) => group.calls.map((call) => call.tool_name).join(', ');
  const news = after
    .filter((group) => !was.has(group.id))
    .map((g) => `New: ${g.agentName} asks to run ${tools(g)}.`);
  const gone = before
    .filter((group) => !is.has(group.id))
    .map((g) => `${g.agentName}'s request was answered.`);
  if (news.length || gone.length) announce([...news, ...gone].join(' '));
}

function renderList() {
  if (!state.groups) return;
  const focused = document.activeElement?.dataset?.request;
  const calls = state.groups.reduce((sum, group) => sum + group.calls.length, 0);
  $('count').textContent = `${calls} ${calls === 1 ? 'call' : 'calls'} in ${state.groups.length} ${
    state.groups.length === 1 ? 'request' : 'requests'
  }, newest first.`;
  $('empty').hidden = state.groups.length > 0;
  $('requests').replaceChildren(
    ...state.groups.map((group) =>
      h(
        'li',
        {},
        h(
          'button',
          {
            type: 'button',
            class: 'request',
            'data-request': group.id,
            'aria-current': group.id === state.selected ? 'true' : undefined,
            onclick: () => select(group.id),
          },
          h('span', { class: 'agent' }, group.agentName),
          group.calls.map((call) =>
            h(
              'span',
              { class: 'call' },
              h('code', { class: 'tool' }, call.tool_name),
              ' ',
              preview(call.arguments),
            ),
          ),
          h(
            'span',
            { class: 'when' },
            'asked ',
            time(group.requestedAt, ago(group.requestedAt)),
            ` · ${expiry(group.expiresAt)}`,
            group.calls.length > 1 ? ` · ${group.calls.length} calls, answered together` : '',
          ),
        ),
      ),
    ),
  );
  // The list is drawn anew: the button that had the focus keeps it.
  if (focused)
    $('requests')
      .querySelector(`[data-request="${CSS.escape(focused)}"]`)
      ?.focus();
}

// ---- One request -------------------------------------------------------------------------------

async function select(id) {
  state.selected = id;
  state.notice = undefined;
  renderList();
  await loadDetail(id);
  $('detail-title')?.focus();
}

async function loadDetail(id) {
  let detail;
  try {
    detail = await api(`/v1/approvals/${encodeURIComponent(id)}`);
  } catch (failure) {
    return handleFailure(failure, (text) => {
      if (state.selected !== id) return;
      $('detail').hidden = false;
      $('detail').replaceChildren(
        h('h2', { id: 'detail-title', tabindex: '-1' }, 'This request could not be shown'),
        h('p', { class: 'error', role: 'alert' }, text),
      );
    });
  }
  if (state.selected !== id) return; // another request was chosen meanwhile
  state.detail = detail;
  renderDetail(detail);
}

const STATUS = {
  answered: 'This request has been answered.',
  expired: 'This request expired before anyone answered it.',
  cancelled: 'The run that asked was cancelled.',
};

function renderDetail(detail) {
  const notice = state.notice?.id === detail.approval_request_id ? state.notice.text : undefined;
  const section = $('detail');
  const fact = (term, ...value) => [h('dt', {}, term), h('dd', {}, ...value)];
  const temporal = /^https?:\/\//.test(detail.temporal_url ?? '') ? detail.temporal_url : undefined;
  section.hidden = false;
  section.replaceChildren(
    ...[
      h(
        'h2',
        { id: 'detail-title', tabindex: '-1' },
        `${detail.agent_name || detail.agent_id} asks to run ${toolNames(detail)}`,
      ),
      h(
        'dl',
        { class: 'facts' },
        fact(
          'Asked',
          time(
            detail.requested_at,
            `${new Date(detail.requested_at).toLocaleString()} (${ago(detail.requested_at)})`,
          ),
        ),
        fact('Expiry', expiry(detail.expires_at)),
        fact('Conversation', detail.conversation_id ?? 'the agent’s default conversation'),
        fact('Run', h('code', {}, detail.run_id)),
        temporal &&
          fact(
            'Workflow',
            h(
              'a',
              { href: temporal, target: '_blank', rel: 'noopener noreferrer' },
              'Open in the Temporal UI',
            ),
          ),
      ),
      notice && h('p', { class: 'notice' }, notice),
      detail.status === 'pending' ? answerForm(detail) : outcome(detail),
      context(detail),
    ].filter(Boolean),
  );
}

const toolNames = (detail) => detail.tool_calls.map((call) => call.tool_name).join(', ');

/** The form: one decision per call, sent together as the request's one answer. */
function answerForm(detail) {
  const count = detail.tool_calls.length;
  const form = h(
    'form',
    { class: 'answer', novalidate: true, 'aria-labelledby': 'answer-title' },
    h('h3', { id: 'answer-title' }, count > 1 ? `Answer the ${count} calls (sent together)` : 'Answer'),
    detail.tool_calls.map((call, index) => callFields(call, index, count)),
    h('p', { id: 'answer-error', class: 'error', role: 'alert' }),
    h('button', { type: 'submit', class: 'send' }, 'Send answer'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    send(detail, form);
  });
  return form;
}

function callFields(call, index, count) {
  const key = `call-${index}`;
  const pretty = prettyJson(call.arguments);
  const choice = (value, label) =>
    h(
      'label',
      { class: 'choice' },
      h('input', {
        type: 'radio',
        name: `${key}-decision`,
        value,
        onchange: () => showChoice(fieldset, value),
      }),
      ` ${label}`,
    );
  const clientTool = call.kind === 'client_tool';
  const fieldset = h(
    'fieldset',
    { class: 'tool-call', 'data-tool-call': call.tool_call_id, 'aria-describedby': `${key}-error` },
    h('legend', {}, count > 1 ? `Call ${index + 1} of ${count}: ` : 'Call: ', h('code', {}, call.tool_name)),
    clientTool &&
      h(
        'p',
        { class: 'hint' },
        'This tool runs in the app that sent the message: here it can only be denied.',
      ),
    h('p', { class: 'label', id: `${key}-arguments-label` }, 'Arguments'),
    h('pre', { class: 'json', 'aria-labelledby': `${key}-arguments-label` }, pretty),
    parameterList(call.parameters),
    h(
      'div',
      { class: 'choices' },
      !clientTool && choice('approve', 'Approve'),
      !clientTool && choice('edit', 'Approve with edited arguments'),
      choice('deny', 'Deny'),
    ),
    h(
      'div',
      { class: 'edit', hidden: true },
      h('label', { for: `${key}-arguments` }, `Edited arguments of ${call.tool_name} (JSON)`),
      h(
        'textarea',
        { id: `${key}-arguments`, rows: Math.min(16, pretty.split('\n').length + 2), spellcheck: 'false' },
        pretty,
      ),
    ),
    h(
      'div',
      { class: 'deny', hidden: true },
      h('label', { for: `${key}-reason` }, `Reason for denying ${call.tool_name} (the agent reads it)`),
      h('input', { id: `${key}-reason`, type: 'text' }),
    ),
    h('p', { id: `${key}-error`, class: 'error' }),
  );
  return fieldset;
}

function showChoice(fieldset, value) {
  fieldset.querySelector('.edit').hidden = value !== 'edit';
  fieldset.querySelector('.deny').hidden = value !== 'deny';
}

/** What the tool takes, from its JSON schema: a help for editing the arguments. */
function parameterList(parameters) {
  const properties = Object.entries(parameters?.properties ?? {});
  if (!properties.length) return null;
  const required = new Set(parameters.required ?? []);
  return h(
    'details',
    { class: 'parameters' },
    h('summary', {}, 'What the tool takes'),
    h(
      'ul',
      {},
      properties.map(([name, schema]) =>
        h(
          'li',
          {},
          h('code', {}, name),
          ` (${schema.type ?? 'any'}${required.has(name) ? ', required' : ''})`,
          schema.description ? `: ${schema.description}` : '',
        ),
      ),
    ),
  );
}

/** Each call's decision; the first problem found gets the focus and nothing is sent. */
function decisionsOf(detail, form) {
  const approvals = [];
  let invalid;
  detail.tool_calls.forEach((call, index) => {
    const key = `call-${index}`;
    const fieldset = form.querySelector(`[data-tool-call="${CSS.escape(call.tool_call_id)}"]`);
    const problem = (text, element) => {
      $(`${key}-error`).textContent = text;
      element.setAttribute('aria-invalid', 'true');
      invalid ??= element;
    };
    $(`${key}-error`).textContent = '';
    fieldset.querySelectorAll('[aria-invalid]').forEach((element) => element.removeAttribute('aria-invalid'));
    const decision = fieldset.querySelector(`input[name="${key}-decision"]:checked`)?.value;
    const answer = { type: 'approval', tool_call_id: call.tool_call_id };
    if (!decision)
      return problem(`Choose what to do with ${call.tool_name}.`, fieldset.querySelector('input'));
    if (decision === 'deny') {
      const reason = $(`${key}-reason`).value.trim();
      return approvals.push({ ...answer, approve: false, ...(reason ? { reason } : {}) });
    }
    if (decision === 'approve') return approvals.push({ ...answer, approve: true });
    const textarea = $(`${key}-arguments`);
    textarea.setAttribute('aria-describedby', `${key}-error`);
    let edited;
    try {
      edited = JSON.parse(textarea.value);
    } catch (error) {
      return problem(`The edited arguments are not valid JSON: ${error.message}`, textarea);
    }
    if (typeof edited !== 'object' || edited === null || Array.isArray(edited))
      return problem('The edited arguments must be a JSON object: { "name": value, … }.', textarea);
    approvals.push({ ...answer, approve: true, arguments: edited });
  });
  return { approvals, invalid };
}

async function send(detail, form) {
  const { approvals, invalid } = decisionsOf(detail, form);
  const error = $('answer-error');
  error.textContent = '';
  if (invalid) return invalid.focus();
  const button = form.querySelector('.send');
  button.disabled = true;
  const id = detail.approval_request_id;
  try {
    await api(`/v1/approvals/${encodeURIComponent(id)}/answer`, {
      method: 'POST',
      body: { approvals },
      headers: state.approver ? { 'x-letta-approver': state.approver } : {},
    });
  } catch (failure) {
    button.disabled = false;
    if (failure instanceof ApiError && failure.status === 409) {
      state.notice = { id, text: `Not sent: ${failure.message}` };
      await loadDetail(id);
      return $('detail-title')?.focus();
    }
    // The alert region says it; the focus stays on the button.
    return handleFailure(failure, (text) => (error.textContent = `Not sent: ${text}`));
  }
  announce(`Answer sent for ${detail.agent_name || detail.agent_id}.`);
  // The answer is recorded: the request is shown as it ended (the agent goes on by itself).
  state.notice = { id, text: 'Your answer was sent: the agent goes on.' };
  await loadDetail(id);
  $('detail-title').focus();
  refresh();
}

/** How a request ended, and what was decided. */
function outcome(detail) {
  const by = detail.answered_by;
  const decided = detail.tool_calls.filter((call) => call.decision);
  return h(
    'section',
    { class: 'outcome', 'aria-labelledby': 'outcome-title' },
    h('h3', { id: 'outcome-title' }, STATUS[detail.status] ?? `Status: ${detail.status}`),
    detail.answered_at &&
      h(
        'p',
        {},
        'Answered ',
        time(detail.answered_at, new Date(detail.answered_at).toLocaleString()),
        by?.name ? ` by ${by.name}` : '',
        by?.kind ? ` (${ANSWERERS[by.kind] ?? by.kind})` : '',
        '.',
      ),
    decided.length > 0 &&
      h(
        'ul',
        {},
        decided.map((call) =>
          h(
            'li',
            {},
            h('code', {}, call.tool_name),
            ` ${DECISIONS[call.decision] ?? call.decision}`,
            call.edited_arguments ? [' with ', h('code', {}, call.edited_arguments)] : '',
            call.reason ? `: “${call.reason}”` : '',
          ),
        ),
      ),
  );
}

const DECISIONS = { approved: 'approved', denied: 'denied', client_return: 'answered by its client' };
const ANSWERERS = {
  password: 'with the server password',
  open_access: 'on a server without a password',
  token: 'with an access token',
  signed_link: 'through a signed link',
  timeout: 'by the timeout',
  cancel: 'by a cancel',
};

// ---- Context: the last messages, the memory as it was ------------------------------------------

const SPEAKERS = {
  user_message: 'User',
  assistant_message: 'Agent',
  reasoning_message: 'Agent, thinking',
  hidden_reasoning_message: 'Agent, thinking',
  tool_call_message: 'Tool call',
  tool_return_message: 'Tool result',
  approval_request_message: 'Asks for approval',
  approval_response_message: 'Approval answer',
};

const contentText = (content) =>
  typeof content === 'string'
    ? content
    : (content ?? []).map((part) => (part.type === 'text' ? part.text : `[${part.type}]`)).join('\n');

function messageText(message) {
  const calls = message.tool_calls?.length
    ? message.tool_calls
    : message.tool_call
      ? [message.tool_call]
      : [];
  switch (message.message_type) {
    case 'reasoning_message':
      return message.reasoning ?? '';
    case 'hidden_reasoning_message':
      return '(hidden)';
    case 'tool_call_message':
    case 'approval_request_message':
      return calls.map((call) => `${call.name}(${call.arguments})`).join('\n');
    case 'tool_return_message':
      return String(message.tool_return ?? '');
    case 'approval_response_message':
      return (message.approvals ?? [])
        .map((answer) =>
          answer.approve === false ? `denied${answer.reason ? `: ${answer.reason}` : ''}` : 'approved',
        )
        .join('\n');
    default:
      return contentText(message.content);
  }
}

const messageItem = (message) =>
  h(
    'li',
    { class: 'message' },
    h('span', { class: 'speaker' }, SPEAKERS[message.message_type] ?? message.message_type),
    h('pre', {}, messageText(message)),
  );

function context(detail) {
  return h(
    'section',
    { class: 'context', 'aria-labelledby': 'context-title' },
    h('h3', { id: 'context-title' }, 'Context'),
    h('h4', {}, 'The last messages'),
    detail.messages?.length
      ? h('ol', { class: 'messages' }, detail.messages.map(messageItem))
      : h('p', {}, 'None.'),
    h('h4', {}, 'The agent’s memory when it asked'),
    detail.blocks?.length
      ? detail.blocks.map((block) =>
          h(
            'details',
            { class: 'block', open: true },
            h('summary', {}, block.label),
            h('pre', {}, block.value),
          ),
        )
      : h('p', {}, 'No memory blocks.'),
  );
}

// ---- Live updates ------------------------------------------------------------------------------

/** Connected: updates come with the stream. Not: the list is fetched every few seconds meanwhile. */
function live(connected) {
  if (connected) {
    clearInterval(state.poll);
    state.poll = undefined;
    $('connection').textContent = 'Live: the list updates by itself.';
  } else {
    state.poll ??= setInterval(refresh, POLL_MS);
    $('connection').textContent =
      `Live updates interrupted: the list is checked every ${POLL_MS / 1000} seconds.`;
  }
}

/**
 * Listens to /v1/approvals/stream. EventSource cannot send an Authorization header, so the stream is
 * read with fetch. Each event means the list changed: it is fetched again (the event's data names the
 * request, but the list is what shows it). A lost stream is reopened after 1, 2, 4… up to 30 seconds.
 */
async function listen() {
  const controller = new AbortController();
  state.stream = controller;
  try {
    const response = await fetch('/v1/approvals/stream', {
      headers: { ...authorization(), accept: 'text/event-stream' },
      cache: 'no-store',
      signal: controller.signal,
    });
    if (response.status === 401)
      return signOut('The server no longer accepts this password or token: sign in again.');
    if (!response.ok || !response.body) throw new Error(`the stream answered ${response.status}`);
    live(true);
    state.retryMs = FIRST_RETRY_MS;
    refresh(); // what changed while no stream was open
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer = (buffer + value).replace(/\r\n?/g, '\n');
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (/^event: ?approvals$/m.test(event)) refresh();
      }
    }
  } catch {
    // Reopened below, unless this page closed it.
  }
  if (controller.signal.aborted || state.stream !== controller) return;
  live(false);
  setTimeout(() => state.stream === controller && listen(), state.retryMs);
  state.retryMs = Math.min(state.retryMs * 2, MAX_RETRY_MS);
}

// ---- Start -------------------------------------------------------------------------------------

$('login-form').addEventListener('submit', signIn);
$('sign-out').addEventListener('click', () => signOut());
$('approver').value = state.approver;
// Ages and expiries, drawn again now and then.
setInterval(renderList, 30_000);
showWhetherOpen('/v1/approvals/?limit=1').then((open) => (state.open = open));
if (state.credential !== null) enterWorkspace();
else $('approver').focus();
