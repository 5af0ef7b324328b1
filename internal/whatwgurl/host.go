package whatwgurl

import (
	"strconv"
	"strings"
)

// isForbiddenHost reports whether r is a forbidden host code point.
func isForbiddenHost(r rune) bool {
	switch r {
	case 0x00, '\t', '\n', '\r', ' ', '#', '/', ':', '<', '>', '?', '@', '[', '\\', ']', '^', '|':
		return true
	}
	return false
}

// isForbiddenDomain reports whether r is a forbidden domain code point.
func isForbiddenDomain(r rune) bool {
	return isForbiddenHost(r) || r <= 0x1F || r == '%' || r == 0x7F
}

// parseHost is the host parser. It returns the serialized host.
func parseHost(input []rune, isOpaque bool) (string, error) {
	if len(input) > 0 && input[0] == '[' {
		if input[len(input)-1] != ']' {
			return "", errorf("IPv6 address without closing bracket")
		}
		addr, ok := parseIPv6(input[1 : len(input)-1])
		if !ok {
			return "", errorf("invalid IPv6 address")
		}
		return "[" + serializeIPv6(addr) + "]", nil
	}
	if isOpaque {
		return parseOpaqueHost(input)
	}
	domain := string(decodeUTF8(percentDecode([]byte(string(input))), false))
	ascii, err := domainToASCII(domain)
	if err != nil {
		return "", err
	}
	if endsInNumber(ascii) {
		v, ok := parseIPv4(ascii)
		if !ok {
			return "", errorf("invalid IPv4 address")
		}
		return serializeIPv4(v), nil
	}
	return ascii, nil
}

// domainToASCII is the standard's "domain to ASCII" with beStrict false.
func domainToASCII(domain string) (string, error) {
	var result string
	if isASCIIString(domain) && !hasPunycodeLabel(domain) {
		result = asciiLower(domain)
	} else {
		r, ok := uts46ToASCII(domain)
		if !ok {
			return "", errorf("invalid domain")
		}
		result = r
	}
	if result == "" {
		return "", errorf("empty host")
	}
	for _, r := range result {
		if isForbiddenDomain(r) {
			return "", errorf("forbidden domain code point")
		}
	}
	return result, nil
}

func isASCIIString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// hasPunycodeLabel reports whether a label of the ASCII string s starts with
// "xn--", case-insensitively.
func hasPunycodeLabel(s string) bool {
	for _, label := range strings.Split(s, ".") {
		if len(label) >= 4 && strings.EqualFold(label[:4], "xn--") {
			return true
		}
	}
	return false
}

// parseOpaqueHost is the opaque-host parser used by non-special schemes.
func parseOpaqueHost(input []rune) (string, error) {
	for _, r := range input {
		if isForbiddenHost(r) {
			return "", errorf("forbidden host code point")
		}
	}
	var b []byte
	for _, r := range input {
		b = appendEncoded(b, r, c0ControlSet)
	}
	return string(b), nil
}

// endsInNumber is the "ends in a number" checker.
func endsInNumber(s string) bool {
	parts := strings.Split(s, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := parseIPv4Number(last)
	return ok
}

// ipv4Saturate bounds intermediate IPv4 numbers; any larger value is
// rejected anyway, so the exact amount does not matter.
const ipv4Saturate = 1 << 40

// parseIPv4Number is the IPv4 number parser.
func parseIPv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	radix := uint64(10)
	if len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X") {
		s, radix = s[2:], 16
	} else if len(s) >= 2 && s[0] == '0' {
		s, radix = s[1:], 8
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		d, ok := hexValue(s[i])
		if !ok || uint64(d) >= radix {
			return 0, false
		}
		if n < ipv4Saturate {
			n = n*radix + uint64(d)
		}
	}
	return n, true
}

// parseIPv4 is the IPv4 parser; it is only called when s ends in a number.
func parseIPv4(s string) (uint32, bool) {
	parts := strings.Split(s, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return 0, false
	}
	numbers := make([]uint64, 0, 4)
	for _, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return 0, false
		}
		numbers = append(numbers, n)
	}
	for _, n := range numbers[:len(numbers)-1] {
		if n > 255 {
			return 0, false
		}
	}
	last := numbers[len(numbers)-1]
	if last >= uint64(1)<<(8*(5-len(numbers))) {
		return 0, false
	}
	v := last
	for i, n := range numbers[:len(numbers)-1] {
		v += n << (8 * (3 - i))
	}
	return uint32(v), true
}

func serializeIPv4(v uint32) string {
	return strconv.Itoa(int(v>>24)) + "." + strconv.Itoa(int(v>>16&0xFF)) + "." +
		strconv.Itoa(int(v>>8&0xFF)) + "." + strconv.Itoa(int(v&0xFF))
}

// parseIPv6 is the IPv6 parser.
func parseIPv6(in []rune) ([8]uint16, bool) {
	var addr [8]uint16
	pieceIndex := 0
	compress := -1
	p := 0
	at := func(i int) rune {
		if i < len(in) {
			return in[i]
		}
		return eof
	}
	if at(p) == ':' {
		if at(p+1) != ':' {
			return addr, false
		}
		p += 2
		pieceIndex++
		compress = pieceIndex
	}
	for at(p) != eof {
		if pieceIndex == 8 {
			return addr, false
		}
		if at(p) == ':' {
			if compress != -1 {
				return addr, false
			}
			p++
			pieceIndex++
			compress = pieceIndex
			continue
		}
		value, length := 0, 0
		for length < 4 && at(p) < 0x80 && at(p) >= 0 {
			d, ok := hexValue(byte(at(p)))
			if !ok {
				break
			}
			value = value*0x10 + int(d)
			p++
			length++
		}
		if at(p) == '.' {
			if length == 0 {
				return addr, false
			}
			p -= length
			if pieceIndex > 6 {
				return addr, false
			}
			numbersSeen := 0
			for at(p) != eof {
				ipv4Piece := -1
				if numbersSeen > 0 {
					if at(p) == '.' && numbersSeen < 4 {
						p++
					} else {
						return addr, false
					}
				}
				if !isDigit(at(p)) {
					return addr, false
				}
				for isDigit(at(p)) {
					number := int(at(p) - '0')
					if ipv4Piece == -1 {
						ipv4Piece = number
					} else if ipv4Piece == 0 {
						return addr, false
					} else {
						ipv4Piece = ipv4Piece*10 + number
					}
					if ipv4Piece > 255 {
						return addr, false
					}
					p++
				}
				addr[pieceIndex] = addr[pieceIndex]*0x100 + uint16(ipv4Piece)
				numbersSeen++
				if numbersSeen == 2 || numbersSeen == 4 {
					pieceIndex++
				}
			}
			if numbersSeen != 4 {
				return addr, false
			}
			break
		} else if at(p) == ':' {
			p++
			if at(p) == eof {
				return addr, false
			}
		} else if at(p) != eof {
			return addr, false
		}
		addr[pieceIndex] = uint16(value)
		pieceIndex++
	}
	if compress != -1 {
		swaps := pieceIndex - compress
		pieceIndex = 7
		for pieceIndex != 0 && swaps > 0 {
			addr[pieceIndex], addr[compress+swaps-1] = addr[compress+swaps-1], addr[pieceIndex]
			pieceIndex--
			swaps--
		}
	} else if pieceIndex != 8 {
		return addr, false
	}
	return addr, true
}

// serializeIPv6 is the IPv6 serializer (without brackets).
func serializeIPv6(addr [8]uint16) string {
	// Find the first longest run of two or more zero pieces.
	compress, best := -1, 1
	for i := 0; i < 8; {
		if addr[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && addr[j] == 0 {
			j++
		}
		if j-i > best {
			compress, best = i, j-i
		}
		i = j
	}
	var b strings.Builder
	ignore0 := false
	for i := 0; i < 8; i++ {
		if ignore0 && addr[i] == 0 {
			continue
		}
		ignore0 = false
		if compress == i {
			if i == 0 {
				b.WriteString("::")
			} else {
				b.WriteString(":")
			}
			ignore0 = true
			continue
		}
		b.WriteString(strconv.FormatUint(uint64(addr[i]), 16))
		if i != 7 {
			b.WriteByte(':')
		}
	}
	return b.String()
}
