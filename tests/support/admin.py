"""The Django admin in the tests: a changelist's rows, a read-only admin's
refusals."""
from django.urls import reverse


def changelist(client, url, query=''):
    """The rows the admin changelist at `url` shows for `query`."""
    response = client.get(url + query)
    assert response.status_code == 200, response.content
    return response.context['cl'].result_list


def assert_admin_read_only(client, url, obj):
    """The admin of the changelist at `url` has no add page and refuses to
    delete `obj`."""
    assert client.get(f'{url}add/').status_code == 403
    assert client.post(f'{url}{obj.pk}/delete/', {'post': 'yes'}).status_code == 403


def admin_url(model, view='changelist', *args):
    opts = model._meta
    return reverse(f'admin:{opts.app_label}_{opts.model_name}_{view}', args=args)


def form_data(response):
    """The POST data of a rendered change form as it stands (main form,
    inline management forms and rows)."""
    assert response.status_code == 200, response.content
    forms = [response.context['adminform'].form]
    for inline in response.context['inline_admin_formsets']:
        forms += [inline.formset.management_form, *inline.formset.forms]
    data = {}
    for form in forms:
        for name in form.fields:
            value = form[name].value()
            if value is not None and value is not False:
                data[form.add_prefix(name)] = 'on' if value is True else value
    return data
