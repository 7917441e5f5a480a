/*
 * tls_priority.h -- the GnuTLS priority string every TLS listener of once
 * serves with unless the operator says otherwise (not API): onced's HTTPS
 * (src/http/tls.c) and its gRPC listener (src/grpc/h2.c) share it, so both
 * ports offer the same protocol versions and key exchanges; and what both,
 * and the gRPC client, say of a TLS setting in a build without TLS.
 */
#ifndef ONCE_CORE_TLS_PRIORITY_H
#define ONCE_CORE_TLS_PRIORITY_H

/* TLS 1.2 and 1.3 only, and only key exchanges with forward secrecy (no
 * static RSA key exchange, no pre-shared or anonymous ones); the server's
 * order of preference. */
#define ONCE_TLS_PRIORITY_DEFAULT                                                                \
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-RSA:-PSK:-DHE-PSK:-ECDHE-PSK:-RSA-PSK:"       \
    "-ANON-DH:-ANON-ECDH:%SERVER_PRECEDENCE"

/* Built with -DONCE_TLS=OFF (no GnuTLS): every TLS setting is refused
 * with this. */
#define ONCE_TLS_OFF_MSG "TLS support was not built in (configure with -DONCE_TLS=ON)"

#endif /* ONCE_CORE_TLS_PRIORITY_H */
