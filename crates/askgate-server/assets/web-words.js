// What askgate writes on its web page, in the person's language: the wording,
// in English and Simplified Chinese as the chat channels word it (askgate-core's
// chrome.rs), and how a duration and a deadline read. Plain JavaScript, no
// build step, loaded before web.js, which uses it as `askgateWords`; it
// touches no page.
'use strict';

// Used by web.js, a script of its own.
// eslint-disable-next-line no-unused-vars
const askgateWords = (function () {
  // Everything askgate itself writes here, in the recipient's locale.
  // Wording follows the chat channels (askgate-core's chrome.rs).
  const DICT = {
    en: {
      pendingTitle: 'Waiting for you',
      waiting: '{n} waiting',
      shownOf: 'Showing {shown} of {n}',
      showMore: 'Show more',
      loadingMore: 'Loading…',
      recentTitle: 'Recent',
      empty: 'There is no question waiting for you right now.',
      forWho: 'for {name}',
      kickerOne: 'Question for you',
      kickerMany: 'Questions for you',
      // A question to a group the person answers for, on their own page.
      kickerGroup: 'For {name}',
      signOut: 'Sign out',
      within: 'Reply within {d}',
      until: 'until {time}',
      timeUp: 'Time is up',
      reminded: 'A reminder was sent',
      days: '{n} d',
      hours: '{n} h',
      minutes: '{n} min',
      seconds: '{n} s',
      // A deadline on another day, as the chat prompts write it
      // (local_deadline in askgate-core's when.rs).
      deadlineDay: '{weekday} {day} {month}, {time}',
      weekdays: 'Mon Tue Wed Thu Fri Sat Sun',
      months: 'Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec',
      chooseOne: 'Choose one',
      chooseAny: 'Choose any',
      recommended: 'Recommended',
      otherLabel: 'Other — your own answer',
      otherPlaceholder: 'Type your answer',
      back: 'Back',
      next: 'Next',
      submit: 'Submit',
      send: 'Send',
      skip: 'Skip',
      skipAll: 'Skip all',
      skipAllTitle: 'Skip all {n} questions?',
      skipAllNone: 'Nothing is answered yet. Skip all and send no answer?',
      skipAllSome: 'You answered {k} of {n}: {list}. Skip all and send no answer? Your answers will not be sent.',
      cancel: 'Cancel',
      notSaved: 'Your answer to this step was not saved yet; it is sent when you submit.',
      stepOf: 'Question {i} of {n}',
      sending: 'Sending…',
      submitted: 'Answer submitted',
      skippedNotice: 'Skipped',
      ended: 'This question has already ended.',
      invalid: 'That answer was not accepted.',
      network: 'Could not reach askgate. Check your connection and try again.',
      failed: 'Something went wrong ({status}). Please try again.',
      badLink: 'This link does not work. Ask for a new one.',
      live: 'Live',
      connecting: 'Connecting…',
      reconnecting: 'Reconnecting…',
      status_pending: 'Waiting',
      status_answered: 'Answered',
      status_skipped: 'Skipped',
      status_expired: 'Expired',
      status_cancelled: 'Cancelled',
      status_delivery_failed: 'Could not be delivered',
      listSep: ', ',
      headerSep: ' · ',
      quoted: '“{text}”',
    },
    'zh-CN': {
      pendingTitle: '等待你回答',
      waiting: '{n} 个等待回答',
      shownOf: '已显示 {shown} 个，共 {n} 个',
      showMore: '显示更多',
      loadingMore: '正在加载…',
      recentTitle: '最近',
      empty: '目前没有等待你回答的问题。',
      // 的 follows the name directly, with no space, be it Chinese or Latin.
      forWho: '{name}的问题',
      kickerOne: '有问题需要你回答',
      kickerMany: '有问题需要你回答',
      kickerGroup: '给{name}的问题',
      signOut: '退出登录',
      within: '请在 {d}内回复',
      until: '截止 {time}',
      timeUp: '已到时间',
      reminded: '已发送提醒',
      days: '{n} 天',
      hours: '{n} 小时',
      minutes: '{n} 分钟',
      seconds: '{n} 秒',
      deadlineDay: '{month}月{day}日 {weekday} {time}',
      weekdays: '周一 周二 周三 周四 周五 周六 周日',
      months: '1 2 3 4 5 6 7 8 9 10 11 12',
      chooseOne: '单选',
      chooseAny: '可多选',
      recommended: '推荐',
      otherLabel: '其他 — 用你自己的话回答',
      otherPlaceholder: '输入你的回答',
      back: '上一步',
      next: '下一步',
      submit: '提交',
      send: '发送',
      skip: '跳过',
      skipAll: '全部跳过',
      skipAllTitle: '全部跳过这 {n} 个问题？',
      skipAllNone: '还没有回答任何问题。全部跳过，不发送回答？',
      skipAllSome: '你已回答 {n} 题中的 {k} 题：{list}。全部跳过，不发送回答？这些回答不会被发送。',
      cancel: '取消',
      notSaved: '这一步的回答还没有保存；提交时会一并发送。',
      stepOf: '第 {i} 题，共 {n} 题',
      sending: '正在提交…',
      submitted: '回答已提交',
      skippedNotice: '已跳过',
      ended: '这个问题已经结束。',
      invalid: '这个回答未被接受。',
      network: '无法连接 askgate，请检查网络后重试。',
      failed: '出错了（{status}），请重试。',
      badLink: '此链接无效，请索取新的链接。',
      live: '实时',
      connecting: '正在连接…',
      reconnecting: '正在重新连接…',
      status_pending: '等待回答',
      status_answered: '已回答',
      status_skipped: '已跳过',
      status_expired: '已过期',
      status_cancelled: '已取消',
      status_delivery_failed: '无法送达',
      listSep: '、',
      headerSep: ' · ',
      quoted: '“{text}”',
    },
  };

  let locale = 'en';

  // Sets the language ('en' or 'zh-CN'; anything else is 'en'); whether it changed.
  function setLocale(next) {
    const wanted = next === 'zh-CN' ? 'zh-CN' : 'en';
    const changed = wanted !== locale;
    locale = wanted;
    return changed;
  }

  function t(key, vars) {
    const table = DICT[locale] || DICT.en;
    let text = key in table ? table[key] : DICT.en[key];
    if (text === undefined) return key;
    if (vars) {
      for (const name of Object.keys(vars)) text = text.split('{' + name + '}').join(String(vars[name]));
    }
    return text;
  }

  // Worded as the text prompt words the whole time (Chrome::duration in
  // askgate-core), rounded down: days and hours from a day on, hours and
  // minutes from an hour on, whole minutes for a whole number of minutes or
  // from 5 min on, seconds below that. Counted in whole seconds rounded up,
  // so that a 15-minute question reads "15 min" when it arrives, as its text
  // prompt does, and "14 min" a second later.
  function duration(ms) {
    const seconds = Math.max(0, Math.ceil(ms / 1000));
    const days = Math.floor(seconds / 86400);
    const hours = Math.floor((seconds % 86400) / 3600);
    const minutes = Math.floor((seconds % 3600) / 60);
    // The larger unit, and the smaller one when it is not zero.
    function two(big, count, small, rest) {
      const first = t(big, { n: count });
      return rest > 0 ? first + ' ' + t(small, { n: rest }) : first;
    }
    if (days > 0) return two('days', days, 'hours', hours);
    if (hours > 0) return two('hours', hours, 'minutes', minutes);
    if (seconds % 60 === 0 || seconds >= 300) return t('minutes', { n: minutes });
    return t('seconds', { n: seconds });
  }

  // The wall-clock fields of an instant in the recipient's time zone `zone`
  // (the state's recipient.timeZone, an IANA name) or, when askgate gave none
  // or the browser does not know it, in the browser's.
  function wallClock(ms, zone) {
    const options = {
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    };
    let format;
    try {
      format = new Intl.DateTimeFormat('en-US', zone ? Object.assign({ timeZone: zone }, options) : options);
    } catch (_) {
      format = new Intl.DateTimeFormat('en-US', options);
    }
    const fields = {};
    for (const part of format.formatToParts(new Date(ms))) fields[part.type] = part.value;
    const year = Number(fields.year);
    const month = Number(fields.month);
    const day = Number(fields.day);
    // The weekday of that calendar date, Monday first, whatever the zone.
    const weekday = (new Date(Date.UTC(year, month - 1, day)).getUTCDay() + 6) % 7;
    return { date: year + '-' + month + '-' + day, year, month, day, weekday, time: fields.hour + ':' + fields.minute };
  }

  // A deadline as the chat prompts write it (local_deadline in askgate-core):
  // "09:32" on the same local day as `now` (milliseconds, the server's
  // clock), else "Tue 8 Dec, 09:32" or "12月8日 周二 09:32"; to the minute,
  // rounded down.
  function clockTime(iso, now, zone) {
    const at = Date.parse(iso);
    if (Number.isNaN(at)) return '';
    const wall = wallClock(at, zone);
    if (wall.date === wallClock(now, zone).date) return wall.time;
    return t('deadlineDay', {
      weekday: t('weekdays').split(' ')[wall.weekday],
      day: wall.day,
      month: t('months').split(' ')[wall.month - 1],
      time: wall.time,
    });
  }

  return {
    t: t,
    setLocale: setLocale,
    locale: function () {
      return locale;
    },
    duration: duration,
    clockTime: clockTime,
  };
})();
