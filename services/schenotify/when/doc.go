// Package when is schenotify's time: what a user may write for "when" and
// what instants that means. It holds the time forms of spec 3.3 (ParseTime,
// forms L and R), the duration grammar (ParseDuration), zones and the DST
// policy of spec 7.3 (DefaultZoneName, Resolve; names load through
// settings.LoadZone), recurrence rules (ParseRecurrence,
// Rule.Next), the when forms of "!sche add" (AddSpec, PlanAdd) and the
// validation of a schedule into a Plan with its result codes (PlanTool,
// Failure). Rules cron cannot express (month ends, nth weekdays, working
// days, lunar dates, every N days at a time, advance notice) are
// KindCalendar specs (rulecal.go). Natural expressions in Chinese and
// English ("明天下午3点半", "every weekday 9am") are read by fixed rules in
// ReadNatural, beside them; PlanAdd (through ReadReminder, which finds the
// message around the time), PlanTool and PlanWhen (snooze, edit) use the
// same reader.
// docs/reminders.md lists the grammar and the rules of its readings.
//
// Everything here is a pure function of its inputs and the clock value it is
// given (ProcessZoneName alone reads the process's TZ and /etc/localtime):
// no bus, no NATS, no storage, no logging. It may import the standard
// library, robfig/cron/v3 and 6tail/lunar-go (China's working calendar and
// lunar dates: calendar.go) only; it must not import pkg/bus, pkg/binding or
// package schenotify (which imports it).
//
// New ways of writing a time belong here, beside the forms they extend: a
// parser returns a TimeSpec, a Rule or an AddSpec (as ReadNatural returns a
// Natural), and PlanTool, PlanAdd and PlanWhen keep the checks and result
// codes in one place.
package when
