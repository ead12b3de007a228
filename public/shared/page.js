// What the server's pages (public/approvals/, public/ag-ui/) share: plain DOM helpers and the parts of
// their sign-in. Each page serves this folder below its own path, under its own policy.

export const $ = (id) => document.getElementById(id);

/** An element with attributes (`on…` ones are listeners) and children; `false`/`null` children are left out. */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  element.append(
    ...children.flat().filter((child) => child !== undefined && child !== null && child !== false),
  );
  return element;
}

/** Says `text` through the live region #announcer (emptied first, so that the same words are said again). */
export function announce(text) {
  const region = $('announcer');
  region.textContent = '';
  setTimeout(() => (region.textContent = text), 50);
}

/** Why a sign-in failed, from the API's answer: its status (0: none came) and what it said. */
export function signInRefusal(status, detail) {
  if (status === 401) return 'The server refused this password or token.';
  if (status) return detail ?? `The server answered ${status}.`;
  return 'The server could not be reached.';
}

/**
 * Whether the server asks no password: one without answers `probePath` without any credential (on
 * loopback only). The sign-in then says so (#open-server) and takes an empty field (#credential).
 */
export async function showWhetherOpen(probePath) {
  let open;
  try {
    open = (await fetch(probePath, { cache: 'no-store' })).ok;
  } catch {
    open = false;
  }
  $('open-server').hidden = !open;
  $('credential').required = !open;
  return open;
}

/** Shows the sign-in (#login), or the signed-in page (#workspace) with the session's header (#session). */
export function showSignedIn(signedIn) {
  $('login').hidden = signedIn;
  $('workspace').hidden = !signedIn;
  $('session').hidden = !signedIn;
}
