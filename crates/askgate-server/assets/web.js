// askgate's web page: the recipient's pending questions and their answers.
//
// Plain JavaScript, no framework and no build step: the server ships this file
// as it is. Everything the agent wrote (headers, questions, labels,
// descriptions) and every summary goes into the page with textContent, never
// as markup. The page talks to the API under its own path, /web/{key}.
//
// The page reads the state (api/state) once its event stream is open, again
// after the stream reconnects or says it missed changes, and while the stream
// is down; otherwise each event carries one changed question, which is applied
// in place, and then how many are pending. The state lists the first page of
// pending questions (oldest first) and how many there are in all; "Show more"
// reads the next page (api/pending?after=<the last one read>). A question that
// becomes pending gets its card at once only when the page has every pending
// card; otherwise it is beyond the last card and shows when the person pages
// to it. The count comes from askgate after each change, never from adding up
// events: the page cannot tell whether a question beyond its cards is new.
'use strict';

(function () {
  // What askgate writes here, in the recipient's language (web-words.js).
  const { t, duration } = askgateWords;

  // The page lives at /web/{key}; the API is under the same prefix.
  const base = (function () {
    const match = /^\/web\/[^/]+/.exec(window.location.pathname);
    return match ? match[0] : window.location.pathname.replace(/\/+$/, '');
  })();

  // --- small DOM helpers (text only: no markup is ever parsed) ---

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const name of Object.keys(attrs)) {
        const value = attrs[name];
        if (value === null || value === undefined || value === false) continue;
        if (name === 'class') node.className = value;
        else if (name === 'text') node.textContent = value;
        else if (name === 'dataset') Object.assign(node.dataset, value);
        else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
        else node.setAttribute(name, value === true ? '' : String(value));
      }
    }
    for (const child of children || []) {
      if (child === null || child === undefined || child === false) continue;
      node.append(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return node;
  }

  const $ = (selector) => document.querySelector(selector);

  // --- page state ---

  const view = {
    recipient: null,
    // Milliseconds to add to the local clock to get the server's.
    clockOffset: 0,
    // Pending questions by id: { q, draft, el, parts, busy }; the first ones,
    // oldest first, as many as were read (every one when `complete`).
    cards: new Map(),
    // How many are pending in all: askgate's latest count.
    total: 0,
    // Whether the cards are every pending question: then one that becomes
    // pending gets its card at once.
    complete: true,
    // The last question read ({ id, createdAt }), in askgate's order: the
    // next page starts after it (it may have ended since; askgate pages on
    // from where it was).
    cursor: null,
    // Whether the person asked for the next page and it is being read.
    loadingMore: false,
    // Ended questions, newest first, at most recentLimit (the state says how many).
    recent: [],
    recentLimit: 10,
    // Whether the page has read the state since the stream (re)opened or missed changes.
    synced: false,
    broken: false,
  };

  // --- time ---

  function serverNow() {
    return Date.now() + view.clockOffset;
  }

  // A deadline as the chat prompts write it, in the recipient's time zone
  // (web-words.js).
  function clockTime(iso) {
    return askgateWords.clockTime(iso, serverNow(), view.recipient && view.recipient.timeZone);
  }

  function updateTimeLeft(card) {
    const node = card.parts.timeLeft;
    const deadline = Date.parse(card.q.expiresAt);
    if (Number.isNaN(deadline)) {
      node.textContent = '';
      return;
    }
    const left = deadline - serverNow();
    if (left <= 0) {
      node.textContent = t('timeUp');
      node.classList.add('urgent');
      // The server expires it and the stream says so; read the state once in
      // case no event arrives (soon while the stream is down, and at most
      // every half minute while it is up, in case it silently broke).
      if (!card.expiryChecked && left < (isLive() ? -15000 : -2000)) {
        card.expiryChecked = true;
        if (!isLive() || Date.now() - lastExpiryCheck > 30000) {
          lastExpiryCheck = Date.now();
          refresh();
        }
      }
      return;
    }
    node.textContent = t('within', { d: duration(left) }) + ' · ' + t('until', { time: clockTime(card.q.expiresAt) });
    node.classList.toggle('urgent', left < 60000);
    // Red once askgate has reminded the person: they were told it is waiting.
    node.classList.toggle('reminded', card.q.reminded === true);
    if (card.q.reminded === true) node.title = t('reminded');
    else node.removeAttribute('title');
  }

  let lastExpiryCheck = 0;

  setInterval(function () {
    for (const card of view.cards.values()) updateTimeLeft(card);
  }, 1000);

  // --- notices ---

  let noticeTimer = null;

  function notice(text, kind) {
    const node = $('[data-testid="notice"]');
    node.textContent = text;
    node.dataset.kind = kind || 'info';
    node.hidden = false;
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(function () {
      node.hidden = true;
    }, 6000);
  }

  function setConnection(state) {
    const node = $('[data-testid="connection"]');
    node.dataset.state = state;
    node.textContent = t(state);
  }

  function isLive() {
    return $('[data-testid="connection"]').dataset.state === 'live';
  }

  // --- answers being composed ---

  function newDraft(q) {
    const draft = {
      step: 0,
      answers: q.request.questions.map(function () {
        return { options: new Set(), text: '' };
      }),
    };
    fromProgress(q, draft);
    const missing = firstMissing(draft);
    draft.step = missing < 0 ? 0 : missing;
    return draft;
  }

  // What was answered so far on any surface (a reply in a chat app, or this
  // page saving a step on Next) fills the steps the person has not touched
  // here: they show as done, and the card opens on the first one still
  // missing. Whether it changed anything.
  function fromProgress(q, draft) {
    const progress = q.progress || {};
    let changed = false;
    q.request.questions.forEach(function (question, index) {
      const items = progress[question.id];
      const answer = draft.answers[index];
      if (!Array.isArray(items) || isAnswered(answer)) return;
      for (const item of items) {
        if (item && item.kind === 'option' && Number.isInteger(item.index)) answer.options.add(item.index);
        else if (item && item.kind === 'free_text' && typeof item.text === 'string') answer.text = item.text;
      }
      changed = changed || isAnswered(answer);
    });
    return changed;
  }

  function firstMissing(draft) {
    return draft.answers.findIndex(function (answer) {
      return !isAnswered(answer);
    });
  }

  // A card already shown hears of progress made elsewhere: taken in, and the
  // card moves on from a step that is answered now. The step is rebuilt only
  // when something on it changed, so that the focus and the caret stay put
  // when the progress is the page's own step coming back.
  function takeProgress(card, q) {
    if (JSON.stringify(card.q.progress || {}) === JSON.stringify(q.progress || {})) return;
    card.q.progress = q.progress;
    const step = card.draft.step;
    const wasAnswered = isAnswered(card.draft.answers[step]);
    const changed = fromProgress(card.q, card.draft);
    const missing = firstMissing(card.draft);
    if (!wasAnswered && missing >= 0) card.draft.step = missing;
    if (changed || card.draft.step !== step) renderStep(card);
    else updateControls(card);
  }

  function isAnswered(answer) {
    return answer.options.size > 0 || answer.text.trim() !== '';
  }

  // One step of the draft as the answer route takes it.
  function entry(answer) {
    const text = answer.text.trim();
    return {
      options: Array.from(answer.options).sort(function (a, b) {
        return a - b;
      }),
      text: text === '' ? null : text,
    };
  }

  // Whether step `index` of the draft is what askgate holds as its progress.
  function isSaved(q, draft, index) {
    const items = (q.progress || {})[q.request.questions[index].id];
    if (!Array.isArray(items)) return false;
    const mine = entry(draft.answers[index]);
    const options = items.filter((item) => item && item.kind === 'option').map((item) => item.index);
    const texts = items.filter((item) => item && item.kind === 'free_text').map((item) => item.text);
    return (
      JSON.stringify(options.sort((a, b) => a - b)) === JSON.stringify(mine.options) &&
      (texts[0] || null) === mine.text
    );
  }

  // The final answer: the steps askgate does not hold yet (it fills in the
  // ones saved as progress), at least one so that the request says something.
  function payload(q, draft) {
    const answers = {};
    q.request.questions.forEach(function (question, index) {
      if (!isSaved(q, draft, index)) answers[question.id] = entry(draft.answers[index]);
    });
    if (Object.keys(answers).length === 0) {
      const last = q.request.questions.length - 1;
      answers[q.request.questions[last].id] = entry(draft.answers[last]);
    }
    return { answers: answers };
  }

  // One question with one answer: the card reads "Send" rather than "Submit".
  function isSingleChoice(q) {
    const questions = q.request.questions;
    return questions.length === 1 && !questions[0].multiSelect;
  }

  // Agents end the recommended option's label with " (Recommended)" (the
  // model guidance asks them to): the page shows a badge instead of the
  // suffix. The label given back to askgate is always the option's index.
  const RECOMMENDED = /\s*\(recommended\)\s*$/i;

  // --- a pending question's card ---

  // Who a card's question is for: the person, or a group they answer for
  // (named, so that they know the answer speaks for the group).
  function kicker(q, many) {
    const mine = !q.recipient || !view.recipient || q.recipient.name === view.recipient.name;
    if (mine) return many ? t('kickerMany') : t('kickerOne');
    return t('kickerGroup', { name: q.recipient.displayName || q.recipient.name });
  }

  function buildCard(q, draft) {
    const card = { q: q, draft: draft, busy: false, parts: {} };
    const questions = q.request.questions;
    const parts = card.parts;
    const many = questions.length > 1;

    parts.timeLeft = el('span', { class: 'time-left', 'data-testid': 'time-left' });
    parts.stepBar = null;
    if (many) {
      parts.stepCount = el('span', { class: 'step-count', 'data-testid': 'step-count' });
      parts.segments = questions.map(function () {
        return el('span', { class: 'segment', 'data-testid': 'segment' });
      });
      parts.stepBar = el('div', { class: 'step-bar', 'data-testid': 'step-bar', role: 'group' }, [
        parts.stepCount,
        el('span', { class: 'segments', 'aria-hidden': 'true' }, parts.segments),
      ]);
    }
    parts.step = el('div', { class: 'step' });
    parts.error = el('p', { class: 'card-error', 'data-testid': 'card-error', role: 'alert', hidden: true });

    parts.back = el('button', {
      type: 'button',
      class: 'btn secondary',
      'data-testid': 'back',
      text: t('back'),
      onclick: function () {
        go(card, -1);
      },
    });
    parts.next = el('button', {
      type: 'button',
      class: 'btn primary',
      'data-testid': 'next',
      text: t('next'),
      onclick: function () {
        go(card, 1);
      },
    });
    parts.submit = el('button', {
      type: 'button',
      class: 'btn primary',
      'data-testid': 'submit',
      text: isSingleChoice(q) ? t('send') : t('submit'),
      onclick: function () {
        submit(card);
      },
    });
    // On several questions Skip ends them all: it says so, and asks first.
    parts.skip = el('button', {
      type: 'button',
      class: 'btn quiet',
      'data-testid': 'skip',
      text: many ? t('skipAll') : t('skip'),
      'aria-haspopup': many ? 'dialog' : null,
      onclick: function () {
        if (many) confirmSkip(card);
        else skip(card);
      },
    });

    const nav = el('div', { class: 'nav' }, [parts.back, parts.next, parts.submit]);
    card.el = el(
      'article',
      {
        class: 'card',
        'data-testid': 'question-card',
        'data-question-id': q.id,
        'data-status': 'pending',
        'data-single-choice': isSingleChoice(q) ? 'true' : 'false',
        'aria-label': questions
          .map(function (question) {
            return question.header;
          })
          .join(t('headerSep')),
      },
      [
        el('div', { class: 'card-top' }, [
          el('span', { class: 'kicker', 'data-testid': 'kicker', text: kicker(q, many) }),
          parts.timeLeft,
        ]),
        parts.stepBar,
        parts.step,
        parts.error,
        el('div', { class: 'actions' }, [nav, parts.skip]),
      ],
    );
    renderStep(card);
    updateTimeLeft(card);
    return card;
  }

  function go(card, delta) {
    const draft = card.draft;
    const last = card.q.request.questions.length - 1;
    if (delta > 0 && !isAnswered(draft.answers[draft.step])) return;
    const leaving = draft.step;
    draft.step = Math.min(last, Math.max(0, draft.step + delta));
    renderStep(card);
    focusStep(card);
    if (delta > 0) saveProgress(card, leaving);
  }

  // The first control of the step: the chosen option when there is one.
  function focusStep(card) {
    const step = card.parts.step;
    const first = step.querySelector('input.check:checked') || step.querySelector('button, input');
    if (first) first.focus({ preventScroll: true });
  }

  // Builds the current question of a card.
  function renderStep(card) {
    const q = card.q;
    const draft = card.draft;
    const questions = q.request.questions;
    const index = draft.step;
    const question = questions[index];
    const answer = draft.answers[index];
    const inputId = 'other-' + q.id + '-' + index;
    const headingId = 'question-' + q.id + '-' + index;

    const optionNodes = question.options.map(function (option, optionIndex) {
      const recommended = RECOMMENDED.test(option.label);
      const shownLabel = recommended ? option.label.replace(RECOMMENDED, '') : option.label;
      const body = el('span', { class: 'option-body' }, [
        el('span', { class: 'option-line' }, [
          el('span', { class: 'option-label', 'data-testid': 'option-label', text: shownLabel }),
          recommended ? el('span', { class: 'badge', 'data-testid': 'recommended', text: t('recommended') }) : null,
        ]),
        option.description
          ? el('span', { class: 'option-description', 'data-testid': 'option-description', text: option.description })
          : null,
      ]);
      // A real radio or checkbox: its mark shows what is chosen (nothing is
      // until the person chooses), and the keyboard works as everywhere.
      const box = el('input', {
        type: question.multiSelect ? 'checkbox' : 'radio',
        name: 'option-' + q.id + '-' + index,
        class: 'check',
        'data-testid': question.multiSelect ? 'option-checkbox' : 'option-radio',
        onchange: function () {
          if (card.busy) return;
          if (question.multiSelect) {
            if (box.checked) answer.options.add(optionIndex);
            else answer.options.delete(optionIndex);
          } else if (box.checked) {
            answer.options = new Set([optionIndex]);
            // A chosen option replaces the person's own words.
            answer.text = '';
            card.parts.other.value = '';
          }
          updateControls(card);
        },
      });
      box.checked = answer.options.has(optionIndex);
      return el(
        'label',
        {
          class: 'option ' + (question.multiSelect ? 'multi' : 'single'),
          'data-testid': 'option',
          'data-index': optionIndex,
          'data-label': option.label,
        },
        [box, body],
      );
    });

    const last = index === questions.length - 1;
    const other = el('input', {
      id: inputId,
      type: 'text',
      class: 'other-input',
      'data-testid': 'other-input',
      placeholder: t('otherPlaceholder'),
      autocomplete: 'off',
      enterkeyhint: last ? 'send' : 'next',
      // askgate_core::request::MAX_FREE_TEXT_CHARS (a test in web/mod.rs checks).
      maxlength: '2000',
      oninput: function () {
        answer.text = other.value;
        // For a single-select question the person's own words replace the option.
        if (!question.multiSelect && other.value.trim() !== '') answer.options.clear();
        updateControls(card);
      },
      onkeydown: function (event) {
        if (event.key !== 'Enter' || event.isComposing) return;
        event.preventDefault();
        if (!card.parts.next.hidden && !card.parts.next.disabled) go(card, 1);
        else if (!card.parts.submit.hidden && !card.parts.submit.disabled) submit(card);
      },
    });
    other.value = answer.text;
    card.parts.other = other;
    card.parts.options = optionNodes;

    const hint = question.multiSelect ? t('chooseAny') : t('chooseOne');
    const stepNode = el('div', { class: 'step', 'data-testid': 'step', 'data-step': index }, [
      el('p', { class: 'question-header' }, [
        el('span', { class: 'header-chip', 'data-testid': 'question-header', text: question.header }),
        el('span', { class: 'hint', text: hint }),
      ]),
      el('h3', { class: 'question-text', id: headingId, 'data-testid': 'question-text', text: question.question }),
      el(
        'div',
        { class: 'options', role: question.multiSelect ? 'group' : 'radiogroup', 'aria-labelledby': headingId },
        optionNodes,
      ),
      el('div', { class: 'other' }, [el('label', { class: 'other-label', for: inputId, text: t('otherLabel') }), other]),
    ]);
    card.parts.step.replaceWith(stepNode);
    card.parts.step = stepNode;

    if (card.parts.stepBar) {
      card.parts.stepCount.textContent = index + 1 + ' / ' + questions.length;
      card.parts.stepBar.setAttribute('aria-label', t('stepOf', { i: index + 1, n: questions.length }));
    }
    updateControls(card);
  }

  // A button that cannot be used now: disabled, and said to be (the style
  // keys on the attribute too, so that it never looks usable).
  function setDisabled(button, disabled) {
    button.disabled = disabled;
    button.setAttribute('aria-disabled', disabled ? 'true' : 'false');
  }

  // Reflects the draft and busy state in the buttons, without rebuilding.
  function updateControls(card) {
    const q = card.q;
    const draft = card.draft;
    const questions = q.request.questions;
    const index = draft.step;
    const answer = draft.answers[index];
    const last = index === questions.length - 1;
    const all = draft.answers.every(isAnswered);
    const parts = card.parts;
    const single = isSingleChoice(q);

    parts.options.forEach(function (node, optionIndex) {
      const chosen = answer.options.has(optionIndex);
      node.classList.toggle('chosen', chosen);
      const box = node.querySelector('input');
      box.checked = chosen;
      box.disabled = card.busy;
    });
    parts.other.disabled = card.busy;
    setDisabled(parts.skip, card.busy);

    parts.back.hidden = index === 0;
    setDisabled(parts.back, card.busy);
    parts.next.hidden = last;
    setDisabled(parts.next, card.busy || !isAnswered(answer));
    parts.submit.hidden = !last;
    setDisabled(parts.submit, card.busy || !all);
    parts.submit.textContent = card.busy && card.action === 'answer' ? t('sending') : single ? t('send') : t('submit');

    if (parts.segments) {
      parts.segments.forEach(function (node, segmentIndex) {
        node.classList.toggle('current', segmentIndex === index);
        node.classList.toggle('done', isAnswered(draft.answers[segmentIndex]));
      });
    }
    card.el.classList.toggle('busy', card.busy);
    card.el.setAttribute('aria-busy', card.busy ? 'true' : 'false');
  }

  // `kind` is 'network' when askgate could not be reached: that error goes
  // away by itself once the page is live again.
  function showError(card, text, kind) {
    card.parts.error.textContent = text;
    card.parts.error.hidden = !text;
    card.parts.error.dataset.kind = text ? kind || 'refused' : '';
  }

  // askgate is reachable again: "could not reach askgate" is no longer true.
  function clearNetworkErrors() {
    for (const card of view.cards.values()) {
      if (card.parts.error.dataset.kind === 'network') showError(card, '');
    }
  }

  // --- "Skip all", confirmed in the page ---

  let dialog = null;

  // One dialog for the page, made when first needed: a modal <dialog> keeps
  // the focus inside, closes on Escape, and gives the focus back.
  function skipDialog() {
    if (dialog) return dialog;
    const title = el('h2', { class: 'dialog-title', id: 'skip-title', 'data-testid': 'skip-title' });
    const text = el('p', { class: 'dialog-text', id: 'skip-text', 'data-testid': 'skip-text' });
    const cancel = el('button', { type: 'button', class: 'btn secondary', 'data-testid': 'skip-cancel' });
    const confirm = el('button', { type: 'button', class: 'btn danger', 'data-testid': 'skip-confirm' });
    const node = el(
      'dialog',
      { class: 'dialog', 'data-testid': 'skip-dialog', 'aria-labelledby': 'skip-title', 'aria-describedby': 'skip-text' },
      [title, text, el('div', { class: 'dialog-actions' }, [cancel, confirm])],
    );
    document.body.append(node);
    dialog = { node, title, text, cancel, confirm, card: null };
    cancel.addEventListener('click', function () {
      node.close('cancel');
    });
    confirm.addEventListener('click', function () {
      node.close('skip');
    });
    node.addEventListener('close', function () {
      const card = dialog.card;
      dialog.card = null;
      if (!card) return;
      if (node.returnValue === 'skip' && view.cards.get(card.q.id) === card) skip(card);
      else if (card.parts.skip.isConnected) card.parts.skip.focus();
    });
    return dialog;
  }

  // Names what was answered (by each step's header), so that the person
  // knows what Skip all throws away; Cancel has the focus.
  function confirmSkip(card) {
    if (card.busy) return;
    const d = skipDialog();
    const questions = card.q.request.questions;
    const answered = questions.filter(function (_, index) {
      return isAnswered(card.draft.answers[index]);
    });
    const list = answered
      .map(function (question) {
        return t('quoted', { text: question.header });
      })
      .join(t('listSep'));
    d.title.textContent = t('skipAllTitle', { n: questions.length });
    d.text.textContent =
      answered.length === 0 ? t('skipAllNone') : t('skipAllSome', { k: answered.length, n: questions.length, list });
    d.cancel.textContent = t('cancel');
    d.confirm.textContent = t('skipAll');
    d.card = card;
    d.node.returnValue = '';
    d.node.showModal();
    d.cancel.focus();
  }

  // --- talking to askgate ---

  // POSTs under the page's API: the response and its JSON, or null when
  // askgate could not be reached.
  async function postJson(card, action, body) {
    let response;
    try {
      response = await fetch(base + '/api/questions/' + encodeURIComponent(card.q.id) + '/' + action, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
        cache: 'no-store',
      });
    } catch (_) {
      return null;
    }
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    return { response, data };
  }

  // Saves step `index` (answered, the person moved on) as the question's
  // progress, without holding the person up: a reload, another device or a
  // chat reply carries on from it. A save that fails costs nothing but the
  // save: the final answer sends every step askgate does not hold.
  async function saveProgress(card, index) {
    const answer = card.draft.answers[index];
    if (!isAnswered(answer) || isSaved(card.q, card.draft, index)) return;
    const id = card.q.request.questions[index].id;
    const body = { answers: {} };
    body.answers[id] = entry(answer);
    const sent = JSON.stringify(body.answers[id]);
    const result = await postJson(card, 'progress', body);
    if (view.cards.get(card.q.id) !== card) return;
    if (result && result.response.ok && result.data && result.data.progress) {
      // What askgate holds now; the stream brings the same, and then has nothing to add.
      card.q.progress = result.data.progress;
      return;
    }
    if (result && result.response.status === 409) {
      notice(t('ended'), 'warn');
      awaitEnd(card);
      return;
    }
    // Refused or unreachable: said once, quietly, unless the step changed since.
    if (JSON.stringify(entry(card.draft.answers[index])) === sent && !card.busy) {
      showError(card, t('notSaved'), result ? 'refused' : 'network');
    }
  }

  async function post(card, action, body) {
    if (card.busy) return;
    card.busy = true;
    card.action = action;
    showError(card, '');
    updateControls(card);
    const result = await postJson(card, action, body);
    if (!result) {
      card.busy = false;
      updateControls(card);
      showError(card, t('network'), 'network');
      return;
    }
    const { response, data } = result;
    if (response.ok) {
      notice(action === 'skip' ? t('skippedNotice') : t('submitted'), 'ok');
      awaitEnd(card);
      return;
    }
    const error = (data && data.error) || {};
    if (response.status === 409) {
      notice(t('ended'), 'warn');
      awaitEnd(card);
      return;
    }
    card.busy = false;
    updateControls(card);
    if (response.status === 422) {
      showError(card, error.message ? t('invalid') + ' ' + error.message : t('invalid'));
    } else if (response.status === 404) {
      showBroken();
    } else {
      // askgate's own sentence, when it sent one (say, that the answer could
      // not be saved), after the line in the person's language.
      const failed = t('failed', { status: response.status });
      showError(card, typeof error.message === 'string' && error.message ? failed + ' ' + error.message : failed);
    }
  }

  // The card's question has ended: it stays disabled until the stream brings
  // the question as it ended, which moves it to Recent (or the state does, if
  // the stream is down or says nothing soon).
  function awaitEnd(card) {
    if (!isLive()) {
      refresh();
      return;
    }
    setTimeout(function () {
      if (view.cards.get(card.q.id) === card) refresh();
    }, 5000);
  }

  function submit(card) {
    if (!card.draft.answers.every(isAnswered)) return;
    post(card, 'answer', payload(card.q, card.draft));
  }

  function skip(card) {
    post(card, 'skip', {});
  }

  // --- state from the server ---

  // Reads are made one at a time, the state before a next page: both change
  // the cards, and a page read on top of a state read would place its cards
  // after the wrong ones.
  let fetching = false;
  let wantState = false;
  let wantMore = false;
  // Changes that arrived during a read: applied after it, in order, since it
  // may have been made before or after each of them.
  let held = [];
  // No page is read by itself (see maybeLoadMore) before this time, after
  // one could not be read.
  let autoMoreAfter = 0;

  function refresh() {
    if (view.broken) return;
    wantState = true;
    pump();
  }

  function loadMore() {
    if (view.broken || view.complete) return;
    wantMore = true;
    pump();
  }

  async function pump() {
    if (fetching) return;
    fetching = true;
    try {
      while ((wantState || wantMore) && !view.broken) {
        if (wantState) {
          wantState = false;
          if (!(await readState())) break;
          clearNetworkErrors();
          // Read again if the stream (re)opened or missed changes meanwhile.
          view.synced = !wantState;
        } else {
          wantMore = false;
          if (!view.complete) await readMore();
        }
        applyHeld();
      }
    } catch (error) {
      console.error('askgate: could not read the state', error);
    } finally {
      fetching = false;
      applyHeld();
      view.loadingMore = false;
      renderMore();
      maybeLoadMore();
    }
  }

  // GET under the page's API: the response, or null when askgate could not be reached.
  async function get(path) {
    try {
      return await fetch(base + path, { headers: { accept: 'application/json' }, cache: 'no-store' });
    } catch (_) {
      return null;
    }
  }

  async function readState() {
    // As many pending cards as the person had paged to, so that their cards
    // (and what they chose on them) stay.
    const had = view.cards.size;
    const started = Date.now();
    const response = await get('/api/state');
    if (!response) return false;
    if (response.status === 404) {
      showBroken();
      return false;
    }
    if (!response.ok) return false;
    const date = Date.parse(response.headers.get('date') || '');
    if (!Number.isNaN(date)) {
      const offset = date - (started + Date.now()) / 2;
      // The Date header counts whole seconds; smaller differences are noise.
      view.clockOffset = Math.abs(offset) > 1500 ? offset : 0;
    }
    const state = await response.json();
    let pending = Array.isArray(state.pending) ? state.pending : [];
    while (state.more === true && pending.length > 0 && pending.length < had) {
      const next = await get('/api/pending?after=' + encodeURIComponent(pending[pending.length - 1].id));
      if (!next || !next.ok) break;
      const page = await next.json();
      pending = pending.concat(Array.isArray(page.pending) ? page.pending : []);
      state.more = page.more;
      state.pendingCount = page.pendingCount;
    }
    state.pending = pending;
    apply(state);
    return true;
  }

  // The next page of pending questions, after the last one read.
  async function readMore() {
    const response = await get('/api/pending' + (view.cursor ? '?after=' + encodeURIComponent(view.cursor.id) : ''));
    if (!response || !response.ok) {
      autoMoreAfter = Date.now() + 10000;
      let error = {};
      try {
        error = ((response && (await response.json())) || {}).error || {};
      } catch (_) {
        error = {};
      }
      if (!response) notice(t('network'), 'warn');
      // The question it paged after is not one askgate has: start again.
      else if (response.status === 404 && error.path === 'after') wantState = true;
      else if (response.status === 404) showBroken();
      else notice(t('failed', { status: response.status }), 'warn');
      return;
    }
    const page = await response.json();
    const listed = Array.isArray(page.pending) ? page.pending : [];
    const pending = listed.filter(function (q) {
      return shown(q) && q.status === 'pending';
    });
    let first = null;
    for (const q of pending) {
      if (view.cards.has(q.id) || view.recent.some((r) => r.id === q.id)) continue;
      const card = buildCard(q, newDraft(q));
      place(card);
      first = first || card;
    }
    if (listed.length > 0) view.cursor = listed[listed.length - 1];
    view.complete = page.more !== true;
    if (Number.isInteger(page.pendingCount)) view.total = page.pendingCount;
    const focused = document.activeElement === $('[data-testid="show-more"]');
    updateCount();
    // The button goes once every card is there: the person carries on at the first new one.
    if (focused && view.complete && first) {
      const control = first.el.querySelector('button, input');
      if (control) control.focus();
    }
  }

  function applyHeld() {
    const changes = held;
    held = [];
    for (const change of changes) change();
  }

  // What the stream says, now or after the read under way.
  function receive(change) {
    if (fetching) held.push(change);
    else change();
  }

  // The stream lost changes, or (re)opened: read everything once.
  function resync() {
    view.synced = false;
    refresh();
  }

  function showBroken() {
    view.broken = true;
    if (events) events.close();
    $('[data-testid="connection"]').hidden = true;
    $('.pending').hidden = true;
    $('.recent').hidden = true;
    notice(t('badLink'), 'warn');
    clearTimeout(noticeTimer);
  }

  function applyLocale(next) {
    const changed = askgateWords.setLocale(next);
    document.documentElement.lang = askgateWords.locale();
    for (const node of document.querySelectorAll('[data-i18n]')) node.textContent = t(node.dataset.i18n);
    return changed;
  }

  const shown = (q) => q && typeof q.id === 'string' && q.request && Array.isArray(q.request.questions);

  // Oldest first, as the state lists pending questions (createdAt is RFC 3339
  // with milliseconds, so that strings compare as times).
  function olderFirst(a, b) {
    if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
    return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  }

  function apply(state) {
    view.recipient = state.recipient || null;
    const relabel = applyLocale(view.recipient && view.recipient.locale);
    const name = view.recipient ? view.recipient.displayName || view.recipient.name || '' : '';
    $('[data-testid="recipient"]').textContent = name ? t('forWho', { name: name }) : '';
    $('[data-testid="who-part"]').hidden = !name;
    setConnection($('[data-testid="connection"]').dataset.state || 'connecting');
    if (Number.isInteger(state.recentLimit) && state.recentLimit >= 0) view.recentLimit = state.recentLimit;

    const pending = (state.pending || []).filter(function (q) {
      return shown(q) && q.status === 'pending';
    });
    const list = $('[data-testid="pending-list"]');
    const seen = new Set();
    let previous = null;
    for (const q of pending) {
      seen.add(q.id);
      let card = view.cards.get(q.id);
      if (card && relabel) {
        // New wording everywhere: rebuild from the draft, which is kept.
        const rebuilt = buildCard(q, card.draft);
        card.el.replaceWith(rebuilt.el);
        card = rebuilt;
        view.cards.set(q.id, card);
      } else if (card) {
        card.q.expiresAt = q.expiresAt;
        card.q.reminded = q.reminded;
        updateTimeLeft(card);
        takeProgress(card, q);
      } else {
        card = buildCard(q, newDraft(q));
        view.cards.set(q.id, card);
      }
      // Move a card only when it is out of place, so that focus stays put.
      const wantedBefore = previous ? previous.nextSibling : list.firstChild;
      if (wantedBefore !== card.el) list.insertBefore(card.el, wantedBefore);
      previous = card.el;
    }
    for (const [id, card] of view.cards) {
      if (!seen.has(id)) {
        card.el.remove();
        view.cards.delete(id);
      }
    }
    const listed = state.pending || [];
    view.cursor = listed.length > 0 ? listed[listed.length - 1] : null;
    view.complete = state.more !== true;
    view.total = Number.isInteger(state.pendingCount) ? state.pendingCount : pending.length;
    view.recent = (state.recent || []).filter(shown).slice(0, view.recentLimit);
    renderRecent();
    updateCount();
  }

  // A question as the stream sends it: a pending one gets (or keeps) its card;
  // an ended one leaves the pending list and joins Recent as its summary.
  function applyChange(q) {
    if (!shown(q) || typeof q.status !== 'string') return;
    const before = view.recent.find(function (r) {
      return r.id === q.id;
    });
    if (q.status === 'pending') {
      // Ended already: this change is older than what the page shows.
      if (before) return;
      const card = view.cards.get(q.id);
      if (card) {
        card.q.expiresAt = q.expiresAt;
        card.q.reminded = q.reminded;
        updateTimeLeft(card);
        takeProgress(card, q);
      } else if (view.complete || isBeforeCursor(q)) {
        place(buildCard(q, newDraft(q)));
      }
      // Else it is beyond the last card read: it shows when the person pages to it.
      updateCount();
      return;
    }
    const card = view.cards.get(q.id);
    if (card) {
      card.el.remove();
      view.cards.delete(q.id);
      updateCount();
      maybeLoadMore();
    }
    if (before && before.status === q.status && before.summary === q.summary) return;
    view.recent = view.recent.filter(function (r) {
      return r.id !== q.id;
    });
    view.recent.push(q);
    view.recent.sort(function (a, b) {
      return olderFirst(b, a);
    });
    view.recent.length = Math.min(view.recent.length, view.recentLimit);
    renderRecent();
  }

  // Whether askgate lists the question before the last one read, so that no
  // next page will: one asked a moment before another but stored after it
  // was read. (At the same millisecond askgate lists them as stored, and
  // this one was stored later.)
  function isBeforeCursor(q) {
    return view.cursor !== null && q.createdAt < view.cursor.createdAt;
  }

  // Puts a new card among the pending ones in the state's order (usually last).
  function place(card) {
    view.cards.set(card.q.id, card);
    const list = $('[data-testid="pending-list"]');
    let next = null;
    for (let node = list.lastElementChild; node; node = node.previousElementSibling) {
      const other = view.cards.get(node.dataset.questionId);
      if (other && olderFirst(other.q, card.q) <= 0) break;
      next = node;
    }
    list.insertBefore(card.el, next);
  }

  // How many askgate counted after the stream's last change.
  function applyCount(count) {
    view.total = count;
    updateCount();
    maybeLoadMore();
  }

  // How many are pending: the cards, when they are all of them.
  function pendingCount() {
    return view.complete ? view.cards.size : Math.max(view.total, view.cards.size);
  }

  function updateCount() {
    const count = pendingCount();
    $('[data-testid="empty"]').hidden = count > 0;
    const counter = $('[data-testid="pending-count"]');
    counter.textContent = count > 0 ? t('waiting', { n: count }) : '';
    counter.hidden = count === 0;
    document.title = (count ? '(' + count + ') ' : '') + 'askgate';
    renderMore();
  }

  // "Show more", under the cards while they are not every pending question.
  function renderMore() {
    $('[data-testid="more"]').hidden = view.complete;
    $('[data-testid="shown-of"]').textContent = t('shownOf', { shown: view.cards.size, n: pendingCount() });
    const button = $('[data-testid="show-more"]');
    button.textContent = view.loadingMore ? t('loadingMore') : t('showMore');
    // Not disabled while it reads, which would take the focus away from it.
    button.setAttribute('aria-disabled', view.loadingMore ? 'true' : 'false');
    button.setAttribute('aria-busy', view.loadingMore ? 'true' : 'false');
  }

  // Reads the next page without being asked when no card is left to answer
  // (the person answered every one shown), or when askgate counts no more
  // than the cards (to learn whether the page has them all).
  function maybeLoadMore() {
    if (view.complete || view.broken || fetching || Date.now() < autoMoreAfter) return;
    if (view.cards.size === 0 || view.total <= view.cards.size) loadMore();
  }

  function showMore() {
    if (view.loadingMore || view.complete) return;
    view.loadingMore = true;
    renderMore();
    loadMore();
  }

  function renderRecent() {
    const list = $('[data-testid="recent-list"]');
    const nodes = view.recent.map(function (q) {
      const questions = q.request.questions;
      const headers = questions
        .map(function (question) {
          return question.header;
        })
        .join(t('headerSep'));
      const when = q.resolvedAt ? clockTime(q.resolvedAt) : '';
      const label = t('status_' + q.status);
      // The badge says how it ended, on every card; the summary says more
      // when it has more to say ("Cancelled" is all there is to a cancellation).
      const summary = q.summary && q.summary !== label ? q.summary : null;
      return el(
        'article',
        { class: 'card ended', 'data-testid': 'recent-card', 'data-question-id': q.id, 'data-status': q.status },
        [
          el('div', { class: 'card-top' }, [
            el('span', { class: 'status-badge', 'data-testid': 'status', text: label }),
            when ? el('time', { class: 'when', datetime: q.resolvedAt, text: when }) : null,
          ]),
          el('p', { class: 'ended-headers', text: headers }),
          el(
            'ul',
            { class: 'ended-questions' },
            questions.map(function (question) {
              return el('li', { text: question.question });
            }),
          ),
          summary ? el('p', { class: 'summary', 'data-testid': 'summary', text: summary }) : null,
        ],
      );
    });
    list.replaceChildren.apply(list, nodes);
    $('.recent').hidden = nodes.length === 0;
  }

  // --- live updates ---

  let events = null;
  let retryDelay = 1000;

  function connect() {
    if (view.broken || typeof EventSource === 'undefined') return;
    const source = new EventSource(base + '/api/events');
    events = source;
    source.addEventListener('open', function () {
      if (source !== events) return;
      retryDelay = 1000;
      setConnection('live');
      clearNetworkErrors();
      // The stream is subscribed before it opens: the state read now, with
      // the changes that follow, misses nothing (on the first load, and
      // after a reconnect, whatever happened while it was down).
      resync();
    });
    // An event's JSON, or null when it is not JSON.
    function eventData(event) {
      try {
        return JSON.parse(event.data);
      } catch (_) {
        return null;
      }
    }
    source.addEventListener('changed', function (event) {
      if (source !== events) return;
      const data = eventData(event);
      if (!data || data.missed || !shown(data)) resync();
      else
        receive(function () {
          applyChange(data);
        });
    });
    source.addEventListener('count', function (event) {
      if (source !== events) return;
      const data = eventData(event);
      if (!data || !Number.isInteger(data.pendingCount) || data.pendingCount < 0) return;
      receive(function () {
        applyCount(data.pendingCount);
      });
    });
    source.addEventListener('error', function () {
      if (view.broken || source !== events) return;
      setConnection('reconnecting');
      if (source.readyState === EventSource.CLOSED) {
        // The browser gave up (an error status): try again ourselves, slower each time.
        setTimeout(connect, retryDelay);
        retryDelay = Math.min(retryDelay * 2, 30000);
        refresh();
      }
    });
  }

  // While the stream is down (or the state could not be read since it
  // opened), read the state now and then instead.
  setInterval(function () {
    if (!isLive() || !view.synced) refresh();
  }, 15000);

  document.addEventListener('visibilitychange', function () {
    if (document.visibilityState === 'visible' && (!isLive() || !view.synced)) refresh();
  });

  function start() {
    applyLocale((navigator.language || '').toLowerCase().startsWith('zh') ? 'zh-CN' : 'en');
    $('[data-testid="show-more"]').addEventListener('click', showMore);
    setConnection('connecting');
    if (typeof EventSource === 'undefined') {
      refresh();
      return;
    }
    // The state is read once the stream is open; if it is slow to open,
    // show the questions anyway.
    connect();
    setTimeout(function () {
      if (!view.synced && !fetching) refresh();
    }, 2000);
  }

  // --- signing out: only on /web/me, the page of a person signed in with
  // OpenID Connect (docs/web-page.md). Its own words, in the page's language.
  function addSignOut() {
    if (base !== '/web/me') return;
    const button = el('button', { type: 'button', class: 'btn quiet', 'data-testid': 'sign-out' });
    // Worded again when the state names the person's language.
    const label = () => {
      button.textContent = t('signOut');
    };
    label();
    new MutationObserver(label).observe(document.documentElement, { attributes: true, attributeFilter: ['lang'] });
    button.addEventListener('click', async function () {
      button.disabled = true;
      try {
        // A JSON body, as every state-changing route takes: no cross-site form sends one.
        const response = await fetch('/web/oidc/logout', {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body: '{}',
        });
        if (response.ok) {
          window.location.assign('/web/oidc/signed-out');
          return;
        }
      } catch (error) {
        // Offline: the button comes back for another try.
      }
      button.disabled = false;
    });
    $('.bar-inner').append(button);
  }
  addSignOut();

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
