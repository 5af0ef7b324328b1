package candidate

// The SPDX identifiers an imported resource's licence expression may use.
// The reference accepts every identifier of the SPDX license list
// (spdx-expression-parse 5.0.0); this is the widely used subset, so a rarely
// used standard identifier is refused here where the reference accepts it.
// Completing the list from the SPDX license-list-data release is tracked
// in the package's open items (doc.go).

// spdxLicenses are accepted SPDX license identifiers.
var spdxLicenses = map[string]bool{
	"0BSD": true, "AFL-3.0": true, "AGPL-1.0": true, "AGPL-3.0": true, "AGPL-3.0-only": true, "AGPL-3.0-or-later": true,
	"Apache-1.0": true, "Apache-1.1": true, "Apache-2.0": true, "APSL-2.0": true, "Artistic-1.0": true, "Artistic-2.0": true,
	"BlueOak-1.0.0": true, "BSD-1-Clause": true, "BSD-2-Clause": true, "BSD-2-Clause-Patent": true, "BSD-3-Clause": true, "BSD-3-Clause-Clear": true,
	"BSD-4-Clause": true, "BSL-1.0": true, "CC-BY-3.0": true, "CC-BY-4.0": true, "CC-BY-SA-3.0": true, "CC-BY-SA-4.0": true,
	"CC-BY-NC-4.0": true, "CC-BY-NC-SA-4.0": true, "CC-BY-ND-4.0": true, "CC0-1.0": true, "CDDL-1.0": true, "CDDL-1.1": true,
	"CECILL-2.1": true, "CPL-1.0": true, "ECL-2.0": true, "EPL-1.0": true, "EPL-2.0": true, "EUPL-1.1": true,
	"EUPL-1.2": true, "GFDL-1.3": true, "GFDL-1.3-only": true, "GFDL-1.3-or-later": true, "GPL-1.0": true, "GPL-2.0": true,
	"GPL-2.0-only": true, "GPL-2.0-or-later": true, "GPL-2.0+": true, "GPL-3.0": true, "GPL-3.0-only": true, "GPL-3.0-or-later": true,
	"GPL-3.0+": true, "ISC": true, "LGPL-2.0": true, "LGPL-2.0-only": true, "LGPL-2.0-or-later": true, "LGPL-2.1": true,
	"LGPL-2.1-only": true, "LGPL-2.1-or-later": true, "LGPL-2.1+": true, "LGPL-3.0": true, "LGPL-3.0-only": true, "LGPL-3.0-or-later": true,
	"LGPL-3.0+": true, "LPPL-1.3c": true, "MIT": true, "MIT-0": true, "MPL-1.1": true, "MPL-2.0": true,
	"MPL-2.0-no-copyleft-exception": true, "MS-PL": true, "MS-RL": true, "NCSA": true, "OFL-1.1": true, "OpenSSL": true,
	"OSL-3.0": true, "PHP-3.01": true, "PostgreSQL": true, "PSF-2.0": true, "Python-2.0": true, "Ruby": true,
	"Unicode-DFS-2016": true, "Unicode-3.0": true, "Unlicense": true, "UPL-1.0": true, "Vim": true, "W3C": true,
	"WTFPL": true, "X11": true, "Zlib": true, "ZPL-2.1": true,
}

// spdxExceptions are accepted SPDX exception identifiers.
var spdxExceptions = map[string]bool{
	"Autoconf-exception-3.0": true, "Bison-exception-2.2": true, "Classpath-exception-2.0": true, "GCC-exception-3.1": true, "LLVM-exception": true, "Linux-syscall-note": true,
	"OpenJDK-assembly-exception-1.0": true, "Qt-LGPL-exception-1.1": true, "Swift-exception": true, "u-boot-exception-2.0": true, "WxWindows-exception-3.1": true, "Font-exception-2.0": true,
	"GPL-3.0-linking-exception": true,
}
