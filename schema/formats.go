package schema

// ISODateTime requires an ISO 8601 UTC timestamp as the reference's
// z.iso.datetime() accepts it: a real calendar date (leap years included),
// "T", hours and minutes, optional seconds with optional fraction, and "Z".
// Offsets and local times are refused.
var ISODateTime = Rule[string]{Code: CodeInvalidFormat, Message: "must be an ISO 8601 UTC timestamp such as 2026-01-02T03:04:05.000Z", Test: IsISODateTime}

// IsISODateTime reports whether s matches ISODateTime.
func IsISODateTime(s string) bool {
	if len(s) < len("2006-01-02T15:04Z") || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[len(s)-1] != 'Z' {
		return false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || !validDate(year, month, day) {
		return false
	}
	t := s[11 : len(s)-1]
	if len(t) < 5 || t[2] != ':' {
		return false
	}
	hh, ok1 := digits(t[0:2])
	mm, ok2 := digits(t[3:5])
	if !ok1 || !ok2 || hh > 23 || mm > 59 {
		return false
	}
	t = t[5:]
	if t == "" {
		return true
	}
	if len(t) < 3 || t[0] != ':' {
		return false
	}
	ss, ok := digits(t[1:3])
	if !ok || ss > 59 {
		return false
	}
	t = t[3:]
	if t == "" {
		return true
	}
	if len(t) < 2 || t[0] != '.' {
		return false
	}
	_, ok = digits(t[1:])
	return ok
}

func digits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if i < 9 {
			n = n*10 + int(c-'0')
		}
	}
	return n, true
}

func validDate(year, month, day int) bool {
	if month < 1 || month > 12 || day < 1 {
		return false
	}
	days := [...]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[month-1]
	if month == 2 && (year%4 == 0 && year%100 != 0 || year%400 == 0) {
		days = 29
	}
	return day <= days
}
