use super::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, v.parse().unwrap());
    }
    h
}

fn local() -> Access {
    Access::new("127.0.0.1:4000".parse().unwrap(), false, None, false).unwrap()
}

#[test]
fn a_remote_address_needs_the_flag_and_a_long_token() {
    let remote: SocketAddr = "0.0.0.0:7000".parse().unwrap();
    assert!(Access::new(remote, false, Some("a".repeat(20)), false).is_err());
    assert!(Access::new(remote, true, None, false).is_err());
    assert!(matches!(
        Access::new(remote, true, Some("short".into()), false),
        Err(StudioError::BadToken)
    ));
    assert!(Access::new(remote, true, Some(format!("{};x", "a".repeat(20))), false).is_err());
    let ok = Access::new(remote, true, Some("a".repeat(20)), false).unwrap();
    let host = headers(&[("host", "example.org:7000")]);
    assert!(
        matches!(
            ok.check(&Method::GET, &host, None),
            Err(StudioError::NoAccess)
        ),
        "no access token"
    );
    let with = format!("access={}", "a".repeat(20));
    assert_eq!(
        ok.check(&Method::GET, &host, Some(&with)).unwrap(),
        Admitted::FromUrl
    );
    let url = ok.url("0.0.0.0:7000".parse().unwrap());
    assert!(url.ends_with(&format!(":7000/?{with}")), "{url}");
    assert!(
        !url.contains("0.0.0.0"),
        "a browser cannot open 0.0.0.0: {url}"
    );
}

#[test]
fn loopback_needs_the_access_token_too_by_url_cookie_or_header() {
    let access = local();
    let token = access.access_token.clone();
    let plain = headers(&[("host", "127.0.0.1:4000")]);
    assert!(matches!(
        access.check(&Method::GET, &plain, None),
        Err(StudioError::NoAccess)
    ));
    assert!(
        access
            .check(&Method::GET, &plain, Some("access=guess"))
            .is_err()
    );
    let q = format!("x=1&access={token}");
    assert_eq!(
        access.check(&Method::GET, &plain, Some(&q)).unwrap(),
        Admitted::FromUrl
    );
    let cookie = format!("other=1; kt_studio_4000={token}");
    let by_cookie = headers(&[("host", "127.0.0.1:4000"), ("cookie", &cookie)]);
    assert_eq!(
        access.check(&Method::GET, &by_cookie, None).unwrap(),
        Admitted::Plain
    );
    // another studio's cookie (another port) is not this one's
    let theirs = format!("kt_studio_4001={token}");
    let other = headers(&[("host", "127.0.0.1:4000"), ("cookie", &theirs)]);
    assert!(access.check(&Method::GET, &other, None).is_err());
    let by_header = headers(&[("host", "127.0.0.1:4000"), (ACCESS_HEADER, &token)]);
    assert_eq!(
        access.check(&Method::GET, &by_header, None).unwrap(),
        Admitted::Plain
    );
    let set = access.set_cookie().unwrap();
    let set = set.to_str().unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains(&token),
        "{set}"
    );
}

#[test]
fn changes_need_the_session_token_the_same_origin_and_are_refused_read_only() {
    let access = local();
    let token = access.access_token.clone();
    let session = access.session_token().to_string();
    let base = [("host", "127.0.0.1:4000"), (ACCESS_HEADER, token.as_str())];
    let plain = headers(&base);
    assert!(matches!(
        access.check(&Method::POST, &plain, None),
        Err(StudioError::Forbidden)
    ));
    let mut signed = base.to_vec();
    signed.push((SESSION_HEADER, &session));
    access
        .check(&Method::POST, &headers(&signed), None)
        .unwrap();
    let mut same = signed.clone();
    same.push(("origin", "http://127.0.0.1:4000"));
    same.push(("sec-fetch-site", "same-origin"));
    access.check(&Method::POST, &headers(&same), None).unwrap();
    for (k, v) in [
        ("origin", "http://evil.example"),
        ("origin", "http://127.0.0.1:4001"),
        ("sec-fetch-site", "cross-site"),
        ("sec-fetch-site", "same-site"),
    ] {
        let mut foreign = signed.clone();
        foreign.push((k, v));
        assert!(
            matches!(
                access.check(&Method::POST, &headers(&foreign), None),
                Err(StudioError::CrossOrigin)
            ),
            "{k}: {v}"
        );
    }
    let read_only = Access::new("127.0.0.1:4000".parse().unwrap(), false, None, true).unwrap();
    let t = read_only.access_token.clone();
    let s = read_only.session_token().to_string();
    let signed = headers(&[
        ("host", "localhost:4000"),
        (ACCESS_HEADER, &t),
        (SESSION_HEADER, &s),
    ]);
    assert!(matches!(
        read_only.check(&Method::POST, &signed, None),
        Err(StudioError::ReadOnly(_))
    ));
}

#[test]
fn a_foreign_host_name_on_loopback_is_refused() {
    let access = local();
    let token = access.access_token.clone();
    let rebound = headers(&[("host", "attacker.example:4000"), (ACCESS_HEADER, &token)]);
    assert!(access.check(&Method::GET, &rebound, None).is_err());
    for ok in ["localhost", "127.0.0.1:80", "[::1]:8080"] {
        assert!(is_loopback_host(ok), "{ok}");
    }
}
