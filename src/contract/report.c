#include "contract/report.h"

#include <jansson.h>
#include <string.h>

static const char *gate_name(int g) {
    static const char *const n[] = {"none", "gate 1", "gate 2", "gate 3", "gate 4", "limits"};
    return g >= 0 && g <= 5 ? n[g] : "?";
}

void dsf_report_kernel(FILE *f, const dsf_kernel_result *r) {
    const char *status = r->failed ? "FAIL" : (r->known[1] || r->known[2] || r->known[3] || r->known[4] || r->known[5])
                                                  ? "known"
                                                  : "pass";
    double rms = 0, mx = 0;
    for (int k = 0; k < r->n_impls; k++)
        if (r->impls[k].impl->planted == DSF_GATE_NONE) {
            if (r->impls[k].rms > rms) rms = r->impls[k].rms;
            if (r->impls[k].max > mx) mx = r->impls[k].max;
        }
    int reals = r->n_impls - r->controls;
    fprintf(f, "%-4s %-32s %-5s %d impl, rms %.2e max %.2e, controls %d/%d red as planted, %.0f ms\n",
            dsf_backend_name(r->backend), r->rec->name, status, reals, rms, mx, r->controls_red, r->controls,
            r->gate_ms + r->limits_ms);
    for (int k = 0; k < r->n_impls; k++) {
        const dsf_impl_result *ir = &r->impls[k];
        if (ir->impl->planted == DSF_GATE_NONE) {
            for (int g = 1; g <= 5; g++)
                if (ir->red[g])
                    fprintf(f, "     %s %s%s: %s\n", ir->impl->name, gate_name(g), r->known[g] ? " (known finding)" : "",
                            ir->detail[g]);
        } else if (!ir->as_planted) {
            fprintf(f, "     control %s planted for %s (%s): missed, %s%s%s\n", ir->impl->name,
                    gate_name(ir->impl->planted), ir->impl->what ? ir->impl->what : "",
                    ir->first_red ? "red first at " : "never red", ir->first_red ? gate_name(ir->first_red) : "",
                    ir->first_red ? "" : "");
            if (ir->first_red) fprintf(f, "       %s\n", ir->detail[ir->first_red]);
        }
    }
    if (r->fixed_findings) fprintf(f, "     %d listed known finding(s) now pass: remove them\n", r->fixed_findings);
}

void dsf_summary_add(dsf_summary *s, const dsf_kernel_result *r) {
    int any_known = 0;
    for (int g = 1; g <= 5; g++) any_known |= r->known[g];
    s->kernels++;
    if (r->failed)
        s->fail++;
    else if (any_known)
        s->known++;
    else
        s->pass++;
    s->controls += r->controls;
    s->red += r->controls_red;
    s->missed += r->controls - r->controls_red;
    s->limit_problems += r->limit_problems;
    s->gate_ms += r->gate_ms;
    s->limits_ms += r->limits_ms;
}

void dsf_report_summary(FILE *f, dsf_backend b, const dsf_summary *s) {
    fprintf(f,
            "SUMMARY %s: %d kernels: %d pass gates 1-4, %d fail, %d known findings; %d controls: %d red as planted, "
            "%d missed; %d limit problems; gates %.0f ms, limits %.0f ms\n",
            dsf_backend_name(b), s->kernels, s->pass, s->fail, s->known, s->controls, s->red, s->missed,
            s->limit_problems, s->gate_ms, s->limits_ms);
}

int dsf_contract_exit_status(const dsf_summary *s) { return s->fail || s->missed || s->limit_problems ? 1 : 0; }

int dsf_summary_parse(const char *line, char *backend, size_t bn, dsf_summary *s) {
    char be[16], tail[8];
    int n = 0;
    memset(s, 0, sizeof *s);
    int got = sscanf(line,
                     "SUMMARY %15[a-z]: %d kernels: %d pass gates 1-4, %d fail, %d known findings; %d controls: %d red "
                     "as planted, %d missed; %d limit problems; gates %lf ms, limits %lf ms%n%7s",
                     be, &s->kernels, &s->pass, &s->fail, &s->known, &s->controls, &s->red, &s->missed,
                     &s->limit_problems, &s->gate_ms, &s->limits_ms, &n, tail);
    if (got != 11 || s->pass + s->fail + s->known != s->kernels || s->red + s->missed != s->controls) return -1;
    snprintf(backend, bn, "%s", be);
    return 0;
}

static json_t *impl_json(const dsf_impl_result *ir) {
    json_t *o = json_object(), *gates = json_object();
    json_object_set_new(o, "name", json_string(ir->impl->name));
    json_object_set_new(o, "planted", ir->impl->planted ? json_string(gate_name(ir->impl->planted)) : json_null());
    for (int g = 1; g <= 5; g++)
        json_object_set_new(gates, gate_name(g), ir->red[g] ? json_string(ir->detail[g]) : json_string("pass"));
    json_object_set_new(o, "gates", gates);
    json_object_set_new(o, "geometries", json_integer(ir->impl->n_geoms));
    json_object_set_new(o, "rms_rel", json_real(ir->rms));
    json_object_set_new(o, "max_rel", json_real(ir->max));
    json_object_set_new(o, "worst", json_string(ir->worst));
    if (ir->impl->planted) {
        json_object_set_new(o, "first_red", json_string(gate_name(ir->first_red)));
        json_object_set_new(o, "verdict", json_string(ir->as_planted ? "red as planted" : "missed"));
    }
    return o;
}

int dsf_report_json(const char *path, const dsf_kernel_result *rs, int n, const char *const *skipped, dsf_err *e) {
    json_t *root = json_object(), *ks = json_array(), *sk = json_array();
    for (int i = 0; i < n; i++) {
        const dsf_kernel_result *r = &rs[i];
        json_t *o = json_object(), *impls = json_array(), *known = json_array();
        json_object_set_new(o, "kernel", json_string(r->rec->name));
        json_object_set_new(o, "family", json_string(r->rec->family));
        json_object_set_new(o, "backend", json_string(dsf_backend_name(r->backend)));
        json_object_set_new(o, "status", json_string(r->failed ? "fail" : "pass"));
        for (int g = 1; g <= 5; g++)
            if (r->known[g]) json_array_append_new(known, json_string(gate_name(g)));
        json_object_set_new(o, "known_findings", known);
        json_object_set_new(o, "fixed_findings", json_integer(r->fixed_findings));
        json_object_set_new(o, "limit_problems", json_integer(r->limit_problems));
        json_object_set_new(o, "controls", json_integer(r->controls));
        json_object_set_new(o, "controls_red_as_planted", json_integer(r->controls_red));
        json_object_set_new(o, "rms_bound", json_real(r->rec->rms_bound));
        json_object_set_new(o, "max_bound", json_real(r->rec->max_bound));
        json_object_set_new(o, "gates_ms", json_real(r->gate_ms));
        json_object_set_new(o, "limits_ms", json_real(r->limits_ms));
        for (int k = 0; k < r->n_impls; k++) json_array_append_new(impls, impl_json(&r->impls[k]));
        json_object_set_new(o, "implementations", impls);
        json_array_append_new(ks, o);
    }
    for (int i = 0; skipped && skipped[i]; i++) json_array_append_new(sk, json_string(skipped[i]));
    json_object_set_new(root, "kernels", ks);
    json_object_set_new(root, "skipped_backends", sk);
    int rc = json_dump_file(root, path, JSON_INDENT(1) | JSON_SORT_KEYS);
    json_decref(root);
    return rc ? dsf_fail(e, "%s: cannot write the JSON report", path) : 0;
}
